"""Where the Alibaba Cloud Slurm rules find a cluster's head node and node groups.

The head node is an ecs.Instance tagged `gpufleet:role: slurm-head` (the Alibaba head node's contract,
components/clouds/alicloud/slurm_head.py), or any instance whose user data writes a slurm.conf (the head node carries
the rendered slurm.conf, configless). User data is base64, gzipped on the head node and on a Slurm cluster's nodes
(props.base64_text unpacks it). A node group's scaling configuration or launch template names its group in the
bootstrap settings it writes (components/bootstrap/cloud_init.py: /etc/gpufleet/bootstrap.env, GPUFLEET_NODE_GROUP).
"""

from __future__ import annotations

from typing import Any

from ..cloud_init import node_group_of, written_files
from ..meta import Node, Stack
from ..props import base64_text, get
from ..slurm_heads import slurm_heads
from .resource_types import INSTANCE, LAUNCH_TEMPLATE, SCALING_CONFIGURATION


def files_of(node: Node) -> Any:
    """path -> content of the files the node's cloud-config writes; UNKNOWN while its user data is unknown."""
    return written_files(base64_text(get(node.props, "userData")))


def head_nodes(stack: Stack) -> list[Node]:
    """The stack's Slurm head nodes."""
    return slurm_heads(stack.of_type(INSTANCE), files_of)

def group_launchers(stack: Stack) -> dict[str, list[Node]]:
    """node group -> its scaling configurations and launch templates, by the group their bootstrap settings name."""
    found: dict[str, list[Node]] = {}
    for launcher in stack.of_type(SCALING_CONFIGURATION, LAUNCH_TEMPLATE):
        group = node_group_of(files_of(launcher))
        if group is not None:
            found.setdefault(group, []).append(launcher)
    return found
