"""Where the Slurm rules find a cluster's head node and node groups among AWS resources.

The head node is an ec2.Instance tagged `gpufleet:role: slurm-head` (the AWS head node's contract), or any instance
whose user data writes a slurm.conf (the head node carries the rendered slurm.conf and gres.conf, configless). A
node group's launch template names its group in the bootstrap settings it writes (components/bootstrap/cloud_init.py:
/etc/gpufleet/bootstrap.env, GPUFLEET_NODE_GROUP).
"""

from __future__ import annotations

from typing import Any

from ..cloud_init import node_group_of, written_files
from ..meta import Node, Stack
from ..props import UNKNOWN, base64_text, get
from ..slurm_heads import slurm_heads
from .resource_types import INSTANCE, LAUNCH_TEMPLATE


def user_data_text(node: Node) -> Any:
    """A launch template's or instance's user data as text (UNKNOWN while unknown). An instance takes plain text in
    `userData` and base64 (gzip'd cloud-init) in `userDataBase64` (pulumi_aws ec2.Instance: "gzip-encoded user
    data must be base64-encoded and passed via this argument")."""
    if node.type == INSTANCE and get(node.props, "userDataBase64") is not None:
        return base64_text(get(node.props, "userDataBase64"))
    if node.type == INSTANCE:
        text = get(node.props, "userData")
        return text if text is UNKNOWN or isinstance(text, str) else ""
    return base64_text(get(node.props, "userData"))


def files_of(node: Node) -> Any:
    """path -> content of the files the node's cloud-config writes; UNKNOWN while its user data is unknown."""
    return written_files(user_data_text(node))


def head_nodes(stack: Stack) -> list[Node]:
    """The stack's Slurm head nodes."""
    return slurm_heads(stack.of_type(INSTANCE), files_of)

def group_templates(stack: Stack) -> dict[str, list[Node]]:
    """node group -> its launch templates, by the group each template's bootstrap settings name."""
    found: dict[str, list[Node]] = {}
    for template in stack.of_type(LAUNCH_TEMPLATE):
        group = node_group_of(files_of(template))
        if group is not None:
            found.setdefault(group, []).append(template)
    return found
