"""A node's gres.conf: its GPUs as Slurm GRES, from its instance type's catalog row.

gres.conf.5 (22.05.8): "File is required for all gpu typed GRES" (a count-only GPU GRES is invalid) and File takes
a numeric range suffix (/dev/nvidia[0-7]); Type must match the type the node registers (registration.py). Each node
reads its own gres.conf, so lines carry no NodeName: a dynamic node's name is known only when it registers.
"""

from __future__ import annotations

from gpufleet.catalog.model import InstanceType


def gpu_type(instance: InstanceType) -> str:
    """The GRES type of the type's GPU, as jobs ask for it (--gres=gpu:h100:8): the catalog's model, lower case."""
    return instance.gpu.model.lower().replace(" ", "-")


def render_gres_conf(instance: InstanceType, device_dir: str = "/dev") -> str:
    """gres.conf of a node of `instance`: every GPU by its device file."""
    last = instance.gpu.count - 1
    files = f"{device_dir}/nvidia{last}" if last == 0 else f"{device_dir}/nvidia[0-{last}]"
    return f"Name=gpu Type={gpu_type(instance)} File={files}\n"
