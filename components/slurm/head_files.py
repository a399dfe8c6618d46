"""The head node's files, cloud-neutral: the cluster's slurm.conf, gres.conf and topology.conf (served to the nodes,
which run configless), power.json, the resume and suspend programs and the queue watcher (power_units.py), and the
systemd ordering gpufleet-slurm-head -> munge -> slurmctld. Each cloud adds its part of the scripts
(scripts/slurm-<cloud>.sh) and the settings naming its secret (components/clouds/<cloud>/slurm_head.py), and renders
them as the head node's user data.

The controller's host name and address are the head node's own, known only once it runs: the render writes the
tokens HEAD_HOST / HEAD_ADDRESS (head_site) and scripts/slurm-head.sh puts the machine's values in at boot.
"""

from __future__ import annotations

import base64
import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..bootstrap.added_files import Files, cloud_config_of, gzip_user_data
from ..bootstrap.cloud_init import LIB, SBIN, UNITS, cloud_part, node_script
from .gres_conf import served_gres_conf
from .power_units import POWER_UNITS, power_unit_files
from .site import SlurmSite
from .slurm_conf import render_slurm_conf
from .topology import render_topology_conf

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster

HEAD_HOST = "@HEAD_HOST@"
HEAD_ADDRESS = "@HEAD_ADDRESS@"
HEAD_UNIT = "gpufleet-slurm-head.service"
# The image's units: Ubuntu's munge.service and SchedMD's slurmctld.service (slurm-smd-slurmctld 25.11.5, SchedMD/slurm
# @slurm-25-11-5-1 etc/slurmctld.service.in, vendored in tests/data/slurm/schedmd-25.11.5), kept as they are:
# Type=notify with `slurmctld --systemd`, User=slurm, ConditionPathExists=/etc/slurm/slurm.conf (the slurm.conf
# written here), no pid file under --systemd (src/slurmctld/controller.c lines 760-769). Drop-ins order them after the
# head's first step; munge and slurmctld otherwise start in any order at boot (SchedMD's After=munge.service orders
# without pulling munge in), and slurmctld without munge fails its first RPCs.
MUNGE_DROP_IN = f"[Unit]\nRequires={HEAD_UNIT}\nAfter={HEAD_UNIT}\n"
SLURMCTLD_DROP_IN = "[Unit]\nRequires=munge.service\nAfter=munge.service\n"
# Units the head node's cloud-init enables and starts, in order.
HEAD_UNITS = (HEAD_UNIT, "munge.service", "slurmctld.service", *POWER_UNITS)
# The head node's settings file: common.sh reads it (the same path as a node's bootstrap.env).
HEAD_SETTINGS = "/etc/gpufleet/bootstrap.env"

def head_site() -> SlurmSite:
    """The head node's SlurmSite: the default layout, the controller named by the tokens the boot fills in."""
    return SlurmSite(controller_host=HEAD_HOST, controller_address=HEAD_ADDRESS)


def settings_text(values: Mapping[str, str]) -> str:
    """A shell settings file the Slurm scripts source, each value quoted for the shell."""
    lines = ["# shellcheck shell=bash disable=SC2034", "# gpufleet Slurm settings, rendered by components.slurm"]
    return "\n".join([*lines, *(f"{key}={shlex.quote(value)}" for key, value in values.items())]) + "\n"


def head_settings(site: SlurmSite, cloud_values: Mapping[str, str]) -> str:
    """The head node's settings: where slurm.conf is, the directories the daemons need, and the cloud's values
    (its region and secret)."""
    return settings_text({
        "GPUFLEET_SLURM_ETC": site.etc_dir,
        "GPUFLEET_SLURM_USER": site.slurm_user,
        "GPUFLEET_SLURM_DIRS": " ".join((site.state_dir, site.run_dir, site.log_dir)),
        **cloud_values,
    })


def head_node_files(cluster: ResolvedCluster, site: SlurmSite) -> Files:
    """The head node's files, cloud-neutral (the cloud adds its script part and settings)."""
    return {
        f"{site.etc_dir}/slurm.conf": ("0644", render_slurm_conf(cluster, site)),
        f"{site.etc_dir}/gres.conf": ("0644", served_gres_conf(site)),
        # slurmctld parses gres.conf as well: the include is there, empty (the head has no GPUs).
        site.node_gres_conf: ("0644", ""),
        f"{site.etc_dir}/topology.conf": ("0644", render_topology_conf(cluster)),
        **power_unit_files(cluster, site),
        f"{LIB}/common.sh": ("0644", node_script("common.sh")),
        f"{SBIN}/gpufleet-slurm-head": ("0755", node_script("slurm-head.sh")),
        f"{UNITS}/{HEAD_UNIT}": ("0644", node_script(HEAD_UNIT)),
        f"{UNITS}/munge.service.d/gpufleet.conf": ("0644", MUNGE_DROP_IN),
        f"{UNITS}/slurmctld.service.d/gpufleet.conf": ("0644", SLURMCTLD_DROP_IN),
    }


def cloud_head_config(cluster: ResolvedCluster, cloud: str, cloud_values: Mapping[str, str]) -> str:
    """The head node's cloud-config: the neutral files, its settings with the cloud's values (its secret) and the
    cloud's part of the scripts (scripts/slurm-<cloud>.sh)."""
    site = head_site()
    files = {
        **head_node_files(cluster, site),
        HEAD_SETTINGS: ("0600", head_settings(site, cloud_values)),
        f"{LIB}/slurm-cloud.sh": ("0644", cloud_part(f"slurm-{cloud}.sh", cloud)),
    }
    return cloud_config_of(files, HEAD_UNITS)


def packed_head_user_data(cluster: ResolvedCluster, cloud: str, cloud_values: Mapping[str, str]) -> str:
    """The head node's cloud-config gzipped (cloud-init unpacks it) and base64, as EC2's userDataBase64 and Azure's
    osProfile.customData take it; BootstrapError when over the cloud's cap."""
    packed = gzip_user_data(cloud_head_config(cluster, cloud, cloud_values), cloud, "the Slurm head node",
                            "use fewer node groups or partitions")
    return base64.b64encode(packed).decode()
