"""Which stack-file field a policy violation comes from, where the plan can tell.

Two sources, both from the plan document, nothing guessed: rules whose only input from the stack file is one
field (admin CIDRs for SSH ingress, the budget, the tags, the image profile), and the node group a resource
belongs to (its parent chain reaches a `gpufleet:<cloud>:NodeGroup` component, named `<cluster>-<group>`).
Anything else is the stack's as a whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .stack_lines import StackFileLines

# Rule -> the fields (under the stack's gpufleet key, first one the stack file writes wins) that set what it
# judges. Only rules where the program takes that value from the field and nowhere else.
CLUSTER_FIELDS: dict[str, tuple[str, ...]] = {
    "aws-no-public-admin-ingress": ("network.admin_cidrs",),
    "azure-no-internet-admin-inbound": ("network.admin_cidrs",),
    "alicloud-no-public-admin-ingress": ("network.admin_cidrs",),
    "aws-admin-ingress-per-group": ("network.admin_cidrs",),
    "azure-admin-inbound-per-group": ("network.admin_cidrs",),
    "alicloud-admin-ingress-per-group": ("network.admin_cidrs",),
    "azure-vnet-clear-of-ib-range": ("network.cidr",),
    "hourly-budget": ("budget.max_hourly_usd",),
    "required-tags": ("tags",),
    "image-lock-valid": ("image", "profile"),
    "aws-image-pinned": ("image", "profile"),
    "aws-image-unbaked": ("image",),
    "azure-image-pinned": ("image", "profile"),
    "alicloud-image-pinned": ("image", "profile"),
    "alicloud-image-unbaked": ("image",),
}
# Rule -> the field of the node group the violating resource belongs to.
GROUP_FIELDS: dict[str, str] = {"allowed-instance-types": "instance_types"}
NODE_GROUPS = "node_groups"


def node_group_of(urn: str, resources: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The node group name of the resource `urn` (itself or an ancestor a NodeGroup component), else None."""
    seen: set[str] = set()
    current = resources.get(urn)
    while current is not None and current["urn"] not in seen:
        seen.add(current["urn"])
        parent = resources.get(current.get("parent") or "")
        if current["type"].endswith(":NodeGroup") and current["type"].startswith("gpufleet:") and parent is not None:
            prefix = f"{parent['name']}-"
            return current["name"][len(prefix):] if current["name"].startswith(prefix) else None
        current = parent
    return None


def violation_field(violation: Mapping[str, Any], plan: Mapping[str, Any], lines: StackFileLines) -> str | None:
    """The field path (under the gpufleet key) the violation comes from, or None for the stack as a whole."""
    for field in CLUSTER_FIELDS.get(violation["policy"], ()):
        if lines.root and f"{lines.root}.{field}" in lines.lines:
            return field
    resources = {r["urn"]: r for r in plan.get("resources", [])}
    group = node_group_of(violation.get("urn") or "", resources)
    index = lines.index_of(f"{lines.root}.{NODE_GROUPS}", group) if group is not None and lines.root else None
    if index is None:
        # A group the file inherits (extends) or a stack-wide finding: the field, if the rule names one.
        fields = CLUSTER_FIELDS.get(violation["policy"], ())
        return fields[0] if fields else (NODE_GROUPS if group is not None else None)
    item = f"{NODE_GROUPS}[{index}]"
    field = GROUP_FIELDS.get(violation["policy"])
    return f"{item}.{field}" if field else item
