"""What a node runs to be operated: GPU metrics to the cloud's monitoring, the DCGM error watch that
takes a broken node out of its scaling group, and the shared dataset file system's mount.

gpufleet-gpu-health reads DCGM's fields every minute, publishes them and takes the node out on an error the GPU
cannot recover from. AWS: the CloudWatch agent's `nvidia_gpu` measurements (aggregated per Auto Scaling group) carry
utilisation, memory, power and temperature; gpu-health puts the error fields with the CLI and marks the instance
unhealthy in its group. Azure: gpu-health posts every field as a custom metric of the node's scale set (Azure Monitor
custom metrics REST API, the node identity's token) and reports the node unhealthy to the Application Health
extension, whose automatic repairs replace it. Alibaba Cloud: every field to CloudMonitor custom metrics through the
aliyun CLI, and ESS instance health.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .errors import BootstrapError

CLOUDWATCH_AGENT_CONFIG = "/opt/aws/amazon-cloudwatch-agent/etc/gpufleet.json"
CLOUDWATCH_AGENT_CTL = "/opt/aws/amazon-cloudwatch-agent/bin/amazon-cloudwatch-agent-ctl"
# The agent's nvidia_gpu measurements (CloudWatch user guide, CloudWatch-Agent-NVIDIA-GPU); CloudWatch names
# them nvidia_smi_<measurement>.
NVIDIA_GPU_MEASUREMENTS = (
    "utilization_gpu",
    "utilization_memory",
    "memory_used",
    "memory_total",
    "power_draw",
    "temperature_gpu",
)
GPU_UTILISATION_METRIC = "nvidia_smi_utilization_gpu"
# XIDs after which a node needs replacing (NVIDIA's XID catalogue), as gpu-health.sh's FATAL counts them on the VM
# path; the Kubernetes alert rules read the same list.
FATAL_XIDS = (48, 64, 74, 79, 95, 119, 120)
FATAL_XID_TEXT = ", ".join(map(str, FATAL_XIDS))
GPU_UTILISATION_CUSTOM_METRIC = "gpu_utilization"
# 1 each minute DCGM answered gpu-health.sh, 0 when it did not (then none of DCGM's fields is published): the alarm
# on it is the only sign that the error and utilisation metrics stopped coming.
DCGM_UP_METRIC = "dcgm_up"
DCGM_DOWN_TEXT = "DCGM did not answer on a node: its GPU error and utilisation metrics are not being read"


@dataclass(frozen=True)
class GpuMetrics:
    """Ship GPU metrics and watch DCGM's error fields."""

    namespace: str
    """Where the metrics go: the CloudWatch namespace the node role may write (aws; its IAM condition names the
    same) or the CloudMonitor application group id (alicloud)."""
    group_dimension: str
    """Value of the NodeGroup dimension of gpufleet-gpu-health's metrics: the group's scaling-group name."""
    region: str
    """Region of the cluster, for the cloud's CLI."""
    scaling_group: str | None = None
    """The scaling group the node marks itself unhealthy in where no lifecycle hook names it (Alibaba ESS); None:
    the lifecycle hooks' group, or none (fleets are never marked)."""

    def validate(self) -> None:
        for field in ("namespace", "group_dimension", "region"):
            value = getattr(self, field)
            if not isinstance(value, str) or not value.strip():
                raise BootstrapError(f"gpu_metrics.{field}: must be a non-empty string, got {value!r}")


@dataclass(frozen=True)
class SharedMount:
    """A Lustre file system every node mounts (FSx for Lustre: DNS name and mount name are its outputs)."""

    dns_name: str
    mount_name: str
    mount: str
    """storage.shared.mount, checked by its pydantic model (SharedStorage)."""

    def validate(self) -> None:
        for field in ("dns_name", "mount_name"):  # the file system's outputs
            value = getattr(self, field)
            if not isinstance(value, str) or not value.strip() or any(c.isspace() for c in value):
                raise BootstrapError(f"shared_mount.{field}: must be a non-empty string without spaces, got {value!r}")


def cloudwatch_agent_config(metrics: GpuMetrics) -> dict[str, Any]:
    """The CloudWatch agent configuration: nvidia_gpu every 60 s, aggregated per Auto Scaling group (the
    dimension alarms and scaling policies read)."""
    return {
        "agent": {"metrics_collection_interval": 60, "run_as_user": "root"},
        "metrics": {
            "namespace": metrics.namespace,
            "append_dimensions": {
                "AutoScalingGroupName": "${aws:AutoScalingGroupName}",
                "InstanceId": "${aws:InstanceId}",
                "InstanceType": "${aws:InstanceType}",
            },
            "aggregation_dimensions": [["AutoScalingGroupName"]],
            "metrics_collected": {"nvidia_gpu": {"measurement": list(NVIDIA_GPU_MEASUREMENTS)}},
        },
    }


def lustre_fstab_entry(shared: SharedMount) -> list[str]:
    """A cloud-init `mounts` row: the FSx for Lustre user guide's fstab line (mount at boot, after the network).

    The guide's `x-systemd.requires=network.service` is its Amazon Linux line: Ubuntu 22.04 (the lock's images)
    has no network.service, so the mount would fail after a reboot. Ubuntu's unit is network-online.target
    (systemd.special(7)), which `_netdev` orders the mount after (systemd.mount(5)); required here too."""
    options = "defaults,relatime,flock,_netdev,x-systemd.automount,x-systemd.requires=network-online.target"
    return [f"{shared.dns_name}@tcp:/{shared.mount_name}", shared.mount, "lustre", options, "0", "0"]


def agent_config_text(metrics: GpuMetrics) -> str:
    return json.dumps(cloudwatch_agent_config(metrics), sort_keys=True, separators=(",", ":")) + "\n"
