"""What each cloud gives the pack: its rules, and readers that tell the common rules what a resource runs.

The common rules (allowed instance types, hourly budget) know no cloud: they ask the merged readers
which instance types a resource asks for and how big a scaling group is at its maximum. A cloud adds
its resource types by listing readers in its own package; the registry merges them.
Readers return only values a resource shows: unknown values are left out, never guessed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from .meta import Node, Rule, Stack
from .props import get

# Pack config key of the rules that judge RDMA wiring: the instance types of groups that run RDMA (`rdma: required`,
# or `auto` on a type with a fabric), as the resolved cluster says.
RDMA_IN_USE_TYPES = "rdmaInUseInstanceTypes"
# Pack config key of the rules that keep `rdma: required` groups on one fabric: those groups' names (the stack file's;
# the resources cannot tell `required` from `auto`).
RDMA_REQUIRED_GROUPS = "rdmaRequiredGroups"


@dataclass(frozen=True)
class GroupSize:
    """A scaling group at its maximum: `count` instances of `instance_type` (its primary type)."""

    urn: str | None
    cloud: str
    instance_type: str | None
    count: int | None


TypeReader = Callable[[Node], list[str]]
GroupReader = Callable[[Node, Stack], GroupSize]


def single_string(node: Node, *path: str) -> list[str]:
    """The string at `path` as a one-item list, or [] when it is unset or unknown."""
    value = get(node.props, *path)
    return [value] if isinstance(value, str) and value else []


def strings(values: object) -> list[str]:
    """The non-empty strings of a list property (unknown items left out)."""
    return [value for value in values if isinstance(value, str) and value] if isinstance(values, list) else []


@dataclass(frozen=True)
class Readers:
    """Per resource type token: which instance types it asks for, and (scaling groups) its size at max."""

    types: Mapping[str, TypeReader] = field(default_factory=dict)
    groups: Mapping[str, GroupReader] = field(default_factory=dict)

    @classmethod
    def merge(cls, parts: Iterable[Readers]) -> Readers:
        types: dict[str, TypeReader] = {}
        groups: dict[str, GroupReader] = {}
        for part in parts:
            for mine, theirs in ((types, part.types), (groups, part.groups)):
                clash = sorted(set(mine) & set(theirs))
                if clash:
                    raise RuntimeError(f"two clouds read the same resource type: {', '.join(clash)}")
                mine.update(theirs)  # type: ignore[arg-type]
        return cls(types, groups)

    @property
    def compute_types(self) -> list[str]:
        """Every resource type that asks for instance types."""
        return sorted(set(self.types) | set(self.groups))

    def instance_types(self, node: Node) -> list[str]:
        """The known instance types (or VM sizes) a resource asks for, in declaration order."""
        reader = self.types.get(node.type)
        return reader(node) if reader else []

    def group_sizes(self, stack: Stack) -> list[GroupSize]:
        return [self.groups[node.type](node, stack) for node in stack.nodes if node.type in self.groups]


@dataclass(frozen=True)
class CloudPolicies:
    """One cloud's part of the pack."""

    cloud: str
    rules: tuple[Rule, ...]
    readers: Readers
