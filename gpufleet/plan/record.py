"""What the offline engine records for each registered resource."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SHOW_SECRETS_ENV = "GPUFLEET_SHOW_SECRETS"
"""Set to 1 to print secret inputs in the plan JSON (`gpufleet plan --show-secrets`)."""


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

    def to_json(self, show_secrets: bool = False, digest_key: bytes | None = None) -> dict[str, Any]:
        """The plan JSON entry; secret inputs print as SECRET unless show_secrets (as `pulumi preview`), or as
        keyed digests with `digest_key` (secret_values.digested: what `gpufleet diff` compares)."""
        from .secret_values import digested, without_secrets  # hashlib and hmac: loaded by a plan's output only

        inputs = (self.inputs if show_secrets else digested(self.inputs, digest_key) if digest_key is not None
                  else without_secrets(self.inputs))
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
            "inputs": inputs,
        }
