"""gres.conf: the served file includes each node's own, which the node's boot writes (scripts/slurm-gres.py).

gres.conf.5 (25.11.5): "File is required for all gpu typed GRES" (a count-only GPU GRES is invalid) and File takes a
numeric range suffix (/dev/nvidia[0-7]); a MIG device is one GRES of several device files, MultipleFiles (the parent
/dev/nvidiaN and its GPU and compute instances' /dev/nvidia-caps/nvidia-capM), "mutually exclusive" with File. Type
must match the type the node registers (registration.py). Those capability files are known only once the boot has
partitioned the GPUs, and a dynamic node's name only once it registers, so the configless gres.conf slurmctld serves
cannot list them: it is one `Include <absolute path>` line. s_p_parse_file keeps an absolute include path as is
(SchedMD/slurm @slurm-25-11-5-1 src/common/read_config.c get_extra_conf_path, line 6197) and slurmctld forwards to
configless nodes only includes without a `/` (src/common/parse_config.c _parse_include_directive, line 1223), so
each slurmd reads the node's own file. slurmctld parses gres.conf too, so the head node carries an empty one.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from gpufleet.catalog.model import InstanceType

from ..bootstrap.mig import MigLayout

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedGroup

    from .site import SlurmSite


def gpu_type(instance: InstanceType) -> str:
    """The GRES type of the type's GPU, as jobs ask for it (--gres=gpu:h100:8): the catalog's model, lower case."""
    return instance.gpu.model.lower().replace(" ", "-")


def render_gres_conf(instance: InstanceType, device_dir: str = "/dev") -> str:
    """gres.conf of a node of `instance` with whole GPUs: every GPU by its device file."""
    last = instance.gpu.count - 1
    files = f"{device_dir}/nvidia{last}" if last == 0 else f"{device_dir}/nvidia[0-{last}]"
    return f"Name=gpu Type={gpu_type(instance)} File={files}\n"


def served_gres_conf(site: SlurmSite) -> str:
    """gres.conf as slurmctld reads and serves it: the node's own file, included."""
    return f"Include {site.node_gres_conf}\n"


def gres_counts(instance: InstanceType, mig: MigLayout | None) -> dict[str, int]:
    """GRES type -> count a node of `instance` has: its GPUs, or with MIG each device profile on every GPU (the
    boot creates the same devices on each: bootstrap/mig.py), its profile name the type (1g.10gb)."""
    if mig is None:
        return {gpu_type(instance): instance.gpu.count}
    return {profile: count * instance.gpu.count for profile, count in mig.devices.items()}


def node_gres_plan(group: ResolvedGroup, mig: MigLayout | None, site: SlurmSite) -> str:
    """What scripts/slurm-gres.py writes on a node of `group`, as JSON: where, the device directory, and per
    instance type the whole-GPU gres.conf or the MIG devices per type it must find."""
    types = {instance.name: {"mig": gres_counts(instance, mig)} if mig else
             {"conf": render_gres_conf(instance, site.device_dir)} for instance in group.known_types}
    return json.dumps({"path": site.node_gres_conf, "device_dir": site.device_dir, "types": types}, indent=1) + "\n"
