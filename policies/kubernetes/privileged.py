"""No privileged pods, except the device plugins (and the GPU metrics exporter) that need the host's devices.

Privileged here: a container with `privileged: true` or the SYS_ADMIN (or ALL) capability added, or a pod in the
host's PID or IPC namespace (Checkov CKV_K8S_16, CKV_K8S_39, CKV_K8S_17, CKV_K8S_18). The allow-list names each
workload by namespace/name as components/kubernetes creates it: the NVIDIA device plugin (SYS_ADMIN for MIG and its
config manager), GPU feature discovery (privileged, to read vGPU information), the EFA device plugin (privileged)
and the DCGM exporter (SYS_ADMIN for the DCGM_FI_PROF_* profiling metrics, its manifest says). On AKS the GPU and
Network Operators' operands (driver containers, toolkit, RDMA shared device plugin), which must run privileged, are
created by the operators, not by the program: the pack never sees them, and both operator Deployments are
unprivileged, so the list needs no entry for them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..meta import MANDATORY, Config, Props, Rule, resource_rule
from ..props import get, is_unknown
from .workloads import WORKLOAD_TYPES, containers, pod_specs, workload_name

ALLOWED: frozenset[str] = frozenset({
    "nvidia-device-plugin/nvdp-nvidia-device-plugin",
    "nvidia-device-plugin/nvdp-nvidia-device-plugin-gpu-feature-discovery",
    "kube-system/aws-efa-k8s-device-plugin",
    "dcgm-exporter/dcgm-exporter",
})
ADMIN_CAPABILITIES = frozenset({"SYS_ADMIN", "CAP_SYS_ADMIN", "ALL"})


def _findings(spec: dict[str, Any]) -> list[str]:
    found = [f"pod uses the host's {what} namespace ({key}: true)"
             for key, what in (("hostPID", "process"), ("hostIPC", "IPC")) if spec.get(key) is True]
    for container in containers(spec):
        name = container.get("name")
        if get(container, "securityContext", "privileged") is True:
            found.append(f"container {name!r} is privileged")
        added = get(container, "securityContext", "capabilities", "add")
        granted = sorted(c for c in added if isinstance(c, str) and c.upper() in ADMIN_CAPABILITIES) \
            if isinstance(added, list) else []
        if granted:
            found.append(f"container {name!r} adds {', '.join(granted)}")
    return found


def check_no_privileged(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    if any(is_unknown(get(props, "metadata", key)) for key in ("namespace", "name")):
        return  # during a preview: whether the allow-list names it is not known yet
    workload = workload_name(props)
    if workload in ALLOWED:
        return
    for spec in pod_specs(resource_type, props):
        for finding in _findings(spec):
            yield (f"{workload}: {finding}; only the device plugins on the allow-list ({', '.join(sorted(ALLOWED))}) "
                   "may run privileged")


RULES: list[Rule] = [
    resource_rule(
        "kubernetes-no-privileged-pods",
        "No privileged containers, SYS_ADMIN or host PID/IPC namespaces, except the listed device plugins.",
        MANDATORY,
        "kubernetes",
        WORKLOAD_TYPES,
        check_no_privileged,
        checkov=("CKV_K8S_16", "CKV_K8S_17", "CKV_K8S_18", "CKV_K8S_39"),
    ),
]
