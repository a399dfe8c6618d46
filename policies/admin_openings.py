"""Admin openings judged together: every rule that opens SSH, RDP or all ports, grouped by the security group it
belongs to, and the public address space the group's rules open between them.

A cloud's exposure module turns its resources into Openings. A resource rule judges the openings of one
resource (a group's inline rules together); the stack rule of each cloud judges every group's openings across
resources, which one resource cannot see: Alibaba makes one rule resource per admin CIDR, and AWS ingress rule
resources or Azure security rule resources sit beside a group's inline rules, so two rules of a /24 each (or the
two halves of the internet) are judged as the set they open. Ranges are judged by what they cover
(gpufleet/stackfile/address_ranges.py); a source that names public space without a range (Azure's Internet, `*`,
a service tag) counts as public whatever else the group opens.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from gpufleet.stackfile.address_ranges import Net, too_wide

from .meta import Finding, Node, Stack
from .props import get


@dataclass(frozen=True)
class Opening:
    """One rule that opens admin ports, as a reader would name it."""

    urn: str
    """The resource that declares the rule."""
    where: str
    """Where in it: "ingress[0]", "the rule", "security_rules[1] (ssh-admin-1)"."""
    exposed: str
    """What it opens: "port 22", "port 22 and 3389", "all ports"."""
    sources: tuple[str, ...]
    """The sources as written (ranges and tags)."""
    nets: tuple[Net, ...] = ()
    public_tags: tuple[str, ...] = field(default=())
    """Sources that stand for public address space without a range."""


def verdict(openings: Iterable[Opening]) -> str | None:
    """How much public space the openings cover together when that is too much, else None."""
    openings = list(openings)
    tags = sorted({tag for o in openings for tag in o.public_tags})
    wide = too_wide(net for o in openings for net in o.nets)
    parts = ([f"{', '.join(tags)} (public address space)"] if tags else []) + ([wide] if wide else [])
    return " and ".join(parts) or None


def described(openings: Iterable[Opening], label: bool = False, phrase: str = "opens {exposed} to") -> str:
    """ "ingress[0] opens port 22 to 1.2.3.0/24; ..." (with `label`, each prefixed by its resource's name)."""
    return "; ".join(
        f"{(o.urn.rsplit('::', 1)[-1] + ' ') if label else ''}{o.where} {phrase.format(exposed=o.exposed)} "
        f"{', '.join(o.sources)}"
        for o in openings
    )


def group_of(node: Node, *props: str) -> str:
    """The security group a separate rule belongs to: the stack resource its `props` (the group's id, or name and
    resource group) come from, else the values themselves (a brought group), else the rule alone (unknown)."""
    for prop in props:
        urns = node.property_dependencies.get(prop) or frozenset()
        if len(urns) == 1:
            return next(iter(urns))
    values = [get(node.props, prop) for prop in props]
    if values and all(isinstance(value, str) and value for value in values):
        return "brought:" + "/".join(values)
    return node.urn


def groups_too_wide(
    stack: Stack, by_group: Mapping[str, list[Opening]], hint: str, phrase: str = "opens {exposed} to"
) -> Iterator[Finding]:
    """A finding for every group whose openings, declared by more than one resource, are too wide together (a
    group's openings in one resource are its resource rule's to judge)."""
    for group, openings in sorted(by_group.items()):
        if len({o.urn for o in openings}) < 2:
            continue
        wide = verdict(openings)
        if wide is None:
            continue
        urn = group if group in stack.by_urn else openings[0].urn
        name = group.rsplit("::", 1)[-1] if group in stack.by_urn else group.removeprefix("brought:")
        yield urn, (f"the rules of security group {name} open admin ports together: "
                    f"{described(openings, True, phrase)}: together {wide}: {hint}")
