"""GPU pods tolerate the GPU taint only through its documented key, `nvidia.com/gpu` (the key NVIDIA's device
plugin chart tolerates, and the taint the node groups carry): no blanket toleration that admits them to every
tainted node, and no look-alike key that the GPU nodes' taint does not match."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..meta import MANDATORY, Config, Props, Rule, resource_rule
from ..props import get
from .workloads import WORKLOAD_TYPES, containers, pod_specs, workload_name

GPU_KEY = "nvidia.com/gpu"
MIG_PREFIX = "nvidia.com/mig-"
# GPU memory on ACK's shared GPUs (ack-ai-installer's cGPU: ALI doc-detail/191140.html).
ACK_SHARED_GPU = "aliyun.com/gpu-mem"


def requests_gpus(spec: dict[str, Any]) -> bool:
    """True when a container asks for whole GPUs (nvidia.com/gpu), MIG slices (nvidia.com/mig-<profile>) or ACK's
    shared GPU memory (aliyun.com/gpu-mem)."""
    for container in containers(spec):
        for part in ("limits", "requests"):
            resources = get(container, "resources", part)
            if isinstance(resources, dict) and any(
                    key in (GPU_KEY, ACK_SHARED_GPU) or key.startswith(MIG_PREFIX)
                    for key in resources if isinstance(key, str)):
                return True
    return False


def _findings(spec: dict[str, Any]) -> Iterator[str]:
    tolerations = spec.get("tolerations")
    for toleration in tolerations if isinstance(tolerations, list) else []:
        if not isinstance(toleration, dict):
            continue
        key = toleration.get("key")
        if not key and toleration.get("operator") == "Exists":
            yield "tolerates every taint (operator Exists with no key)"
        elif isinstance(key, str) and key != GPU_KEY and "gpu" in key.lower():
            yield f"tolerates the GPU taint through key {key!r}"


def check_gpu_tolerations(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    for spec in pod_specs(resource_type, props):
        if not requests_gpus(spec):
            continue
        for finding in _findings(spec):
            yield f"{workload_name(props)}: GPU pod {finding}; tolerate the GPU taint with key {GPU_KEY!r} only"


RULES: list[Rule] = [
    resource_rule(
        "kubernetes-gpu-toleration-keys",
        "Pods that request GPUs tolerate the GPU taint only by its key nvidia.com/gpu (no blanket toleration).",
        MANDATORY,
        "kubernetes",
        WORKLOAD_TYPES,
        check_gpu_tolerations,
    ),
]
