"""What Azure compute resources run: a scale set's VM size, and its size at max: the maximum of the
autoscale settings that target it (autoscale owns the capacity), else its sku.capacity.
"""

from __future__ import annotations

from ..cloud import GroupSize, Readers, single_string
from ..meta import Node, Stack
from ..props import as_int, get, items
from .resource_types import AUTOSCALE, VMSS


def autoscale_maximum(node: Node, stack: Stack) -> int | None:
    """The largest profile maximum of the autoscale settings that target the scale set; None without one."""
    maxima = [
        as_int(get(profile, "capacity", "maximum"))
        for setting in stack.dependents_of(node, AUTOSCALE)
        for profile in (items(setting.props, "profiles") if isinstance(items(setting.props, "profiles"), list) else [])
    ]
    known = [value for value in maxima if value is not None]
    return max(known) if known else None


def scale_set_size(node: Node, stack: Stack) -> GroupSize:
    types = single_string(node, "sku", "name")
    count = autoscale_maximum(node, stack)
    if count is None:
        count = as_int(get(node.props, "sku", "capacity"))
    return GroupSize(node.urn, "azure", types[0] if types else None, count)


READERS = Readers(
    types={VMSS: lambda node: single_string(node, "sku", "name")},
    groups={VMSS: scale_set_size},
)
