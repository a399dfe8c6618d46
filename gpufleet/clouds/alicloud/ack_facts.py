"""What ACK reads from a node pool's labels, one place for the stack checks, the node pools and the policies.

Sources: ../shared/reference/kubernetes-gpu.md section 3 (ACK): the driver of a pool's new nodes is pinned by the
pool label `ack.aliyun.com/nvidia-driver-version` (ALI en/document_detail/207292.html); GPU sharing is scheduled by
`ack-ai-installer` from the node label `ack.node.gpu.schedule` (ALI doc-detail/191140.html, updated Mar 26, 2026),
which takes default (whole GPUs), cgpu (shared compute, isolated GPU memory: memory-isolated), core_mem, share
(shared compute and memory, no isolation: what time-slicing is), mps and topology. It has no MIG value, so MIG is
refused on ACK (stackfile/ack_checks.py).
"""

from __future__ import annotations

from types import MappingProxyType

DRIVER_LABEL = "ack.aliyun.com/nvidia-driver-version"
SCHEDULE_LABEL = "ack.node.gpu.schedule"
# gpu_sharing.mode -> the scheduling label's value; `none` sets no label (whole GPUs through the device plugin).
SHARING_SCHEDULE = MappingProxyType({
    "time-slicing": "share",
    "memory-isolated": "cgpu",
})
