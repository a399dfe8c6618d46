"""Where the Azure Slurm rules find a cluster's head node, and what a VM's or scale set's custom data writes.

The head node is a compute VirtualMachine tagged `gpufleet:role: slurm-head` (the Azure head node's contract,
components/clouds/azure/slurm_head.py), or any VM whose custom data writes a slurm.conf (the head node carries the
rendered slurm.conf, configless). Custom data is base64, gzipped on the head node (props.base64_text unpacks it).
"""

from __future__ import annotations

from typing import Any

from ..cloud_init import written_files
from ..meta import Node, Stack
from ..props import base64_text, get
from ..slurm_heads import slurm_heads
from .resource_types import VM, VM_PROFILE, VMSS


def files_of(node: Node) -> Any:
    """path -> content of the files a VM's or scale set's cloud-config writes; UNKNOWN while its custom data is."""
    custom = get(node.props, VM_PROFILE, "osProfile", "customData") if node.type == VMSS else get(
        node.props, "osProfile", "customData")
    return written_files(base64_text(custom))


def head_nodes(stack: Stack) -> list[Node]:
    """The stack's Slurm head nodes."""
    return slurm_heads(stack.of_type(VM), files_of)

