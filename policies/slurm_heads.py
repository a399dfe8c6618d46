"""Where the Slurm rules find a cluster's head node among a cloud's machines: tagged `gpufleet:role: slurm-head` (each
cloud's head node contract, components/clouds/<cloud>/slurm_head.py), or writing a slurm.conf in its cloud-config
(the head node carries the rendered slurm.conf, configless). Each cloud reads its machines' user data its own way."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .cloud_init import file_named
from .meta import Node
from .props import get

ROLE_TAG = "gpufleet:role"
HEAD_ROLE = "slurm-head"


def slurm_heads(machines: Iterable[Node], files_of: Callable[[Node], Any]) -> list[Node]:
    """The machines that are Slurm head nodes; `files_of` reads what a machine's cloud-config writes."""
    found = []
    for node in machines:
        files = files_of(node)
        if get(node.props, "tags", ROLE_TAG) == HEAD_ROLE or (
                isinstance(files, dict) and file_named(files, "slurm.conf") is not None):
            found.append(node)
    return found
