"""What the offline engine records for each registered resource."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

SHOW_SECRETS_ENV = "GPUFLEET_SHOW_SECRETS"
"""Set to 1 to print secret inputs in the plan JSON (`gpufleet plan --show-secrets`)."""
SECRET = "[secret]"
"""How a secret input prints: the Pulumi CLI's own rendering of a secret in a preview."""


def without_secrets(value: Any) -> Any:
    """The value with every engine-marked secret inside it replaced by SECRET."""
    # The SDK's own marker test, imported on use: the CLI reads SHOW_SECRETS_ENV here before any plan loads the SDK.
    from pulumi.runtime.rpc import is_rpc_secret

    return _masked(value, is_rpc_secret)


def _masked(value: Any, is_secret: Callable[[Any], bool]) -> Any:
    if is_secret(value):
        return SECRET
    if isinstance(value, dict):
        return {key: _masked(item, is_secret) for key, item in value.items()}
    if isinstance(value, list):
        return [_masked(item, is_secret) for item in value]
    return value


@dataclass(frozen=True)
class RecordedResource:
    """One RegisterResource call as the engine received it."""

    urn: str
    type: str
    name: str
    parent: str | None
    depends_on: tuple[str, ...]
    inputs: dict[str, Any]
    custom: bool
    protect: bool = False
    ignore_changes: tuple[str, ...] = ()
    property_dependencies: dict[str, tuple[str, ...]] = field(default_factory=dict)
    registered_outputs: tuple[str, ...] = ()
    """Names a component passed to register_outputs (what its callers may read)."""

    def to_json(self, show_secrets: bool = False) -> dict[str, Any]:
        """The plan JSON entry; secret inputs print as SECRET unless show_secrets (as `pulumi preview`)."""
        return {
            "urn": self.urn,
            "type": self.type,
            "name": self.name,
            "parent": self.parent,
            "depends_on": list(self.depends_on),
            # Engine-level fields use the plan's snake_case (as depends_on); inputs keep the provider's names.
            "property_dependencies": {key: list(urns) for key, urns in self.property_dependencies.items()},
            "protect": self.protect,
            "ignore_changes": list(self.ignore_changes),
            "inputs": self.inputs if show_secrets else without_secrets(self.inputs),
        }
