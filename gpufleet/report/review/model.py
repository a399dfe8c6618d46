"""What a plan's review reads and writes: the recorded resources as the plan JSON holds them, and one line per
thing a reviewer should see (an opening, an exposure, a grant, a size, a price)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from ..words import cell_text, resource_name

Resource = Mapping[str, Any]

# The concerns in the order a reviewer reads them: what is reachable from where, who may do what, how big, how much.
CONCERNS = ("ingress", "exposure", "grants", "sizes", "prices")


@dataclass(frozen=True)
class ReviewLine:
    """One thing a resource will do: `subject` names the resource (for grants, the identity), `urn` is its URN."""

    concern: str
    urn: str
    subject: str
    detail: str


def values_at(value: Any, path: str) -> list[Any]:
    """Every value at `path` under `value`: `a.b` reads keys, `a[].b` reads `b` of every item of the list `a`;
    absent keys and None give nothing."""
    found = [value]
    for step in path.split("."):
        each = step.endswith("[]")
        key = step.removesuffix("[]")
        found = [item.get(key) for item in found if isinstance(item, Mapping)]
        if each:
            found = [element for item in found if isinstance(item, list) for element in item]
    return [item for item in found if item is not None]


def shown(values: Sequence[Any]) -> str:
    """Values as a person writes them; a run of equal values once with its count (`efa, efa-only x31`)."""
    runs = [(text, len(list(run))) for text, run in groupby(cell_text(value) for value in values)]
    return ", ".join(text if count == 1 else f"{text} x{count}" for text, count in runs)


class Resources:
    """The recorded resources by URN, to name what an input depends on (an id the offline engine answered is no
    name a reviewer knows: the resource it came from is)."""

    def __init__(self, resources: Sequence[Resource]) -> None:
        self.all = list(resources)
        self.by_urn = {r["urn"]: r for r in resources}

    def dependency_names(self, resource: Resource, prop: str) -> list[str]:
        """The names of the recorded resources that the input `prop` of `resource` depends on."""
        return [resource_name(found["urn"]) for found in self.dependencies(resource, prop)]

    def dependencies(self, resource: Resource, prop: str) -> list[Resource]:
        """The recorded resources that the input `prop` of `resource` depends on."""
        urns = (resource.get("property_dependencies") or {}).get(prop, [])
        return [self.by_urn[urn] for urn in urns if urn in self.by_urn]
