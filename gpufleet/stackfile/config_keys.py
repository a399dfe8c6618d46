"""The stack config keys gpufleet reads (the Pulumi project's namespace): reading a stack file needs these names,
not the stack models, which commands that only read stacks (`images check`) never build."""

from __future__ import annotations

CLUSTER_KEY = "gpufleet:cluster"
IMAGES_KEY = "gpufleet:images"
POLICY_KEY = "gpufleet:policy"
