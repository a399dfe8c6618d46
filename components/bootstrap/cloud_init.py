"""Render a node group's cloud-init user data from a BootstrapConfig.

The output is one ``#cloud-config`` document (no MIME multipart): ``write_files`` lays down
the settings, the expectation file, the node scripts and their systemd units, and ``runcmd``
enables and starts the units. Only the settings file and expect.json vary per node group;
the scripts are static files of this package.
"""

from __future__ import annotations

import base64
import functools
import gzip
import json
import shlex
from importlib import resources
from typing import Any

import yaml

from gpufleet.catalog import load_catalog
from gpufleet.yaml_libyaml import SAFE_DUMPER

from .config import BootstrapConfig
from .errors import BootstrapError
from .operations import CLOUDWATCH_AGENT_CONFIG, CLOUDWATCH_AGENT_CTL, agent_config_text, lustre_fstab_entry

ETC = "/etc/gpufleet"
LIB = "/usr/local/lib/gpufleet"
SBIN = "/usr/local/sbin"
UNITS = "/etc/systemd/system"


@functools.cache  # package files: read once per process, not once per node group
def node_script(name: str) -> str:
    """The text of one node script shipped in components/bootstrap/scripts."""
    return resources.files("components.bootstrap").joinpath("scripts", name).read_text(encoding="utf-8")


# The line of gpu-health.sh that the cloud's part (gpu-health-<cloud>.sh: publish, mark_unhealthy) replaces.
GPU_HEALTH_CLOUD_PART = "# @cloud: the render puts gpu-health-<cloud>.sh here (publish, mark_unhealthy)\n"


# The helpers a cloud's script parts share, put before each part (alicloud-role.sh: as_node, signing with the
# instance's RAM role); only the machines of that cloud carry them.
CLOUD_HELPERS = {"alicloud": "alicloud-role.sh"}


def _body(name: str) -> str:
    """A script part without its first line (`# shellcheck shell=bash`, for the part file on its own only)."""
    return node_script(name).partition("\n")[2]


def cloud_part(name: str, cloud: str) -> str:
    """A script's cloud part (gpu-health-<cloud>.sh, slurm-<cloud>.sh) with the cloud's shared helpers before it."""
    helpers = CLOUD_HELPERS.get(cloud)
    return f"# shellcheck shell=bash\n{_body(helpers)}{_body(name)}" if helpers else node_script(name)


def gpu_health_script(cloud: str) -> str:
    """gpufleet-gpu-health for one cloud: the shared watch with the cloud's publish and mark_unhealthy in one
    script, so a node carries only its own cloud's part (user data is capped)."""
    body = cloud_part(f"gpu-health-{cloud}.sh", cloud).partition("\n")[2]
    return node_script("gpu-health.sh").replace(GPU_HEALTH_CLOUD_PART, body)


def expect_document(cfg: BootstrapConfig) -> dict[str, Any]:
    """The /etc/gpufleet/expect.json the node check reads; `shared_mount` and `fabric_mtu` only where set."""
    document = {
        "profile": cfg.image_profile,
        "driver": cfg.driver,
        "cuda": cfg.cuda,
        "fabric_manager": cfg.fabric_manager,
        "scratch_mount": cfg.scratch_mount if cfg.scratch == "raid0" else None,
        "instance_types": {name: exp.to_json() for name, exp in sorted(cfg.expected.items())},
    }
    if cfg.shared_mount:
        document["shared_mount"] = cfg.shared_mount.mount
    if cfg.fabric_mtu:  # the node check asserts the MTU set_fabric_mtu gave the eRDMA interfaces
        document["fabric_mtu"] = cfg.fabric_mtu
    return document


def settings_file(cfg: BootstrapConfig) -> str:
    """The shell settings every node script sources, each value quoted for the shell."""
    lifecycle = cfg.lifecycle
    values = {
        "GPUFLEET_CLOUD": cfg.cloud,
        "GPUFLEET_CLUSTER": cfg.cluster,
        "GPUFLEET_NODE_GROUP": cfg.node_group,
        "GPUFLEET_SCRATCH_MOUNT": cfg.scratch_mount if cfg.scratch == "raid0" else "",
        "GPUFLEET_CHECKPOINT_HOOK": cfg.checkpoint_hook or "",
        "GPUFLEET_CHECKPOINT_GRACE_SECONDS": str(cfg.checkpoint_grace_seconds),
        "GPUFLEET_REGION": lifecycle.region if lifecycle else cfg.gpu_metrics.region if cfg.gpu_metrics else "",
        "GPUFLEET_SCALING_GROUP": lifecycle.group_name if lifecycle else _metrics_scaling_group(cfg),
        "GPUFLEET_LAUNCH_HOOK": lifecycle.launch_hook if lifecycle else "",
        "GPUFLEET_TERMINATE_HOOK": lifecycle.terminate_hook if lifecycle else "",
        "GPUFLEET_HEALTH_PORT": str(cfg.health_port or ""),
        "GPUFLEET_FABRIC_MTU": str(cfg.fabric_mtu or ""),
        "GPUFLEET_NODECHECK_RETRY_SECONDS": str(cfg.node_check_retry_seconds),
        "GPUFLEET_NODECHECK_RETRY_INTERVAL": str(cfg.node_check_retry_interval),
        "GPUFLEET_METADATA_GUARD": "root-only" if cfg.metadata_guard else "",
        "GPUFLEET_METRICS_NAMESPACE": cfg.gpu_metrics.namespace if cfg.gpu_metrics else "",
        "GPUFLEET_METRICS_GROUP": cfg.gpu_metrics.group_dimension if cfg.gpu_metrics else "",
    }
    if cfg.mig:  # only where MIG is applied: a whole-GPU node's settings are unchanged
        values["GPUFLEET_MIG_DEVICES"] = cfg.mig.instances
    if cfg.nccl_family:  # Azure InfiniBand groups only
        values["GPUFLEET_NCCL_FAMILY"] = cfg.nccl_family
    if cfg.slurm_leave:  # Slurm nodes only: the spot watcher takes the node out of Slurm before it goes
        values["GPUFLEET_SLURM_LEAVE"] = f"{SBIN}/gpufleet-slurm-leave"
    # SC2034: the settings are used by the scripts that source this file.
    lines = [
        "# shellcheck shell=bash disable=SC2034",
        "# gpufleet node settings, rendered by components.bootstrap",
    ]
    lines += [f"{key}={shlex.quote(value)}" for key, value in values.items()]
    return "\n".join(lines) + "\n"


def _metrics_scaling_group(cfg: BootstrapConfig) -> str:
    return (cfg.gpu_metrics.scaling_group if cfg.gpu_metrics else None) or ""


# MIG groups: the boot script runs first in the node check's unit, so after what the node check waits for
# (persistence mode, the fabric manager); "-": its failure leaves the verdict to the node check, which counts the
# MIG devices and so fails the node (components/bootstrap/mig.py).
MIG_DROP_IN = "[Service]\nExecStartPre=-/usr/local/sbin/gpufleet-mig\n"


def _file(path: str, content: str, permissions: str) -> dict[str, str]:
    # No `owner`: cloud-init writes files as root:root unless told otherwise (cc_write_files DEFAULT_OWNER), and
    # every entry's bytes count against the user data cap.
    return {"path": path, "permissions": permissions, "content": content}


def _packed_file(path: str, content: str, permissions: str) -> dict[str, str]:
    """A static node script gzipped (cloud-init write_files encoding gz+b64): user data is capped at the cloud's
    limit, and a p5 group's bootstrap is near AWS's 16 KB."""
    return {**_file(path, _gz_b64(content), permissions), "encoding": "gz+b64"}


@functools.lru_cache(maxsize=32)  # the same few static scripts in every node group
def _unit(name: str) -> dict[str, str]:
    """A unit file of scripts/, gzipped where that makes it shorter (a unit with long comments)."""
    content = node_script(name)
    packed = _packed_file(f"{UNITS}/{name}", content, "0644")
    return packed if len(packed["content"]) < len(content) else _file(f"{UNITS}/{name}", content, "0644")


def _gz_b64(content: str) -> str:
    """mtime 0 keeps the bytes identical across renders."""
    return base64.b64encode(gzip.compress(content.encode(), mtime=0)).decode()


def _service(command: str, script: str, unit: str) -> list[dict[str, Any]]:
    """A node script installed as a command, with the systemd unit that runs it."""
    return [_packed_file(f"{SBIN}/{command}", node_script(script), "0755"),
            _file(f"{UNITS}/{unit}", node_script(unit), "0644")]


def _cloud_config(cfg: BootstrapConfig) -> dict[str, Any]:
    expect = json.dumps(expect_document(cfg), indent=2, sort_keys=True) + "\n"
    files = [
        _file(f"{ETC}/bootstrap.env", settings_file(cfg), "0600"),
        _file(f"{ETC}/expect.json", expect, "0644"),
        _packed_file(f"{LIB}/common.sh", node_script("common.sh"), "0644"),
        _packed_file(f"{SBIN}/gpufleet-health", node_script("health.sh"), "0755"),
        _packed_file(f"{SBIN}/gpufleet-spot-watcher", node_script("spot-watcher.sh"), "0755"),
        _unit("gpufleet-health.service"),
        _file(f"{UNITS}/gpufleet-spot-watcher.service", node_script("gpufleet-spot-watcher.service"), "0644"),
    ]
    units = ["gpufleet-health.service", "gpufleet-spot-watcher.service"]
    if cfg.nvswitch:
        # One baked image serves NVSwitch and PCIe types and leaves the fabric manager disabled
        # (images/install/gpu-stack.sh): an NVSwitch node starts it before the node check, which expects it active.
        units.insert(0, "nvidia-fabricmanager.service")
    if cfg.scratch == "raid0":
        files += _service("gpufleet-scratch", "scratch.sh", "gpufleet-scratch.service")
        units.insert(0, "gpufleet-scratch.service")
    if cfg.nccl_family:
        files += _service("gpufleet-nccl-conf", "nccl-conf.sh", "gpufleet-nccl-conf.service")
        units.insert(0, "gpufleet-nccl-conf.service")
    if cfg.mig:
        files += [
            _packed_file(f"{SBIN}/gpufleet-mig", node_script("mig.sh"), "0755"),
            _file(f"{UNITS}/gpufleet-health.service.d/mig.conf", MIG_DROP_IN, "0644"),
        ]
    if cfg.slurm_leave:
        files.append(_packed_file(f"{SBIN}/gpufleet-slurm-leave", cfg.slurm_leave, "0755"))
    if cfg.health_port:
        files += _service("gpufleet-health-endpoint", "health-endpoint.py", "gpufleet-health-endpoint.service")
        units.append("gpufleet-health-endpoint.service")
    agent: list[list[str]] = []
    if cfg.gpu_metrics:
        files += [
            _packed_file(f"{SBIN}/gpufleet-gpu-health", gpu_health_script(cfg.cloud), "0755"),
            _file(f"{UNITS}/gpufleet-gpu-health.service", node_script("gpufleet-gpu-health.service"), "0644"),
        ]
        # nv-hostengine (the image enables nvidia-dcgm) feeds gpu-health; the agent reads nvidia-smi itself.
        units = ["nvidia-dcgm.service", *units, "gpufleet-gpu-health.service"]
    if cfg.gpu_metrics and cfg.cloud == "aws":  # elsewhere gpu-health publishes utilisation itself
        files.insert(len(files) - 2, _file(CLOUDWATCH_AGENT_CONFIG, agent_config_text(cfg.gpu_metrics), "0644"))
        config = f"file:{CLOUDWATCH_AGENT_CONFIG}"
        agent = [[CLOUDWATCH_AGENT_CTL, "-a", "fetch-config", "-m", "ec2", "-s", "-c", config]]
    document: dict[str, Any] = {
        "write_files": files,
        # --no-block: cloud-init's own unit must not wait on units ordered after the network.
        "runcmd": [
            ["systemctl", "daemon-reload"],
            ["systemctl", "enable", *units],
            ["systemctl", "start", "--no-block", *units],
            *agent,
        ],
    }
    if cfg.shared_mount:
        # cloud-init's mounts module writes the fstab line and mounts it (x-systemd.automount on first use).
        document["mounts"] = [lustre_fstab_entry(cfg.shared_mount)]
    return document


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def _literal_dumper(base: type[yaml.SafeDumper]) -> type[yaml.SafeDumper]:
    """`base` writing multi-line strings as literal blocks so the scripts stay readable in the user data."""
    dumper = type(f"Literal{base.__name__}", (base,), {})
    dumper.add_representer(str, _represent_str)
    return dumper


# libyaml's emitter (SAFE_DUMPER): it counts once per node group.
_LiteralDumper = _literal_dumper(SAFE_DUMPER)


def user_data_limit(cloud: str) -> int:
    """The cloud's published user data limit in bytes before base64 (catalog data with its source)."""
    return int(load_catalog().limit(cloud, "user_data_max_bytes"))


def render_cloud_config(cfg: BootstrapConfig) -> str:
    """The node group's cloud-config document, for a cloud that compresses it before its user data limit applies
    (gzip_user_data checks that); the same config always renders the same bytes."""
    body = yaml.dump(_cloud_config(cfg), Dumper=_LiteralDumper, sort_keys=False, width=1000)
    return "#cloud-config\n" + body


def render_user_data(cfg: BootstrapConfig) -> str:
    """The node group's user data as sent, checked against the cloud's limit."""
    text = render_cloud_config(cfg)
    size, limit = len(text.encode("utf-8")), user_data_limit(cfg.cloud)
    if size > limit:
        raise BootstrapError(
            f"user data: {size} bytes is over {cfg.cloud}'s {limit}-byte user data limit "
            f"(node group {cfg.node_group}); shorten checkpoint_hook or the fallback instance types"
        )
    return text
