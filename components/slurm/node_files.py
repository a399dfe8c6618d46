"""What a node of a Slurm cluster adds to its group's bootstrap, cloud-neutral: the join after the node check
(scripts/slurm-join.sh and its unit, which Requires= and runs After= gpufleet-health.service), the cloud's part of the
scripts (scripts/slurm-<cloud>.sh), the health check program slurm.conf names, and per instance type and zone of the
group the slurmd command it registers with: registration.slurmd_registration's, configless (`--conf-server` the head
node), the instance id left as a token the join fills in from the instance's metadata.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..bootstrap.added_files import Files
from ..bootstrap.cloud_init import ETC, LIB, SBIN, UNITS, cloud_part, node_script
from ..bootstrap.for_group import mig_layout
from ..runtime import warn_unconfirmed
from .gres_conf import node_gres_plan
from .head_files import settings_text
from .health_check import render_health_check
from .registration import slurmd_registration
from .site import SlurmSite

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedGroup

JOIN_UNIT = "gpufleet-slurm-join.service"
INSTANCE_ID = "@INSTANCE_ID@"
SLURMD = "/usr/sbin/slurmd"
# The image's slurmd.service is SchedMD's (slurm-smd-slurmd 25.11.5, SchedMD/slurm @slurm-25-11-5-1
# etc/slurmd.service.in, vendored in tests/data/slurm/schedmd-25.11.5): Type=notify, ExecStart `slurmd --systemd
# $SLURMD_OPTIONS`, RuntimeDirectory=slurm, no ConditionPathExists (commented out there, so a configless node starts).
# The join's own drop-in replaces ExecStart with the registration, keeping --systemd: slurmd refuses it with -D
# (src/slurmd/slurmd/slurmd.c lines 1924-1925) and without it never tells systemd it is ready, which kills it at the
# start timeout. Under --systemd slurmd reports READY only once it has its configuration, and it retries the
# configless fetch every 10 s until slurmctld answers (slurmd.c _establish_configuration, lines 2289-2295): no start
# timeout, so a node booting before the head node's slurmctld waits for it instead of failing. After a reboot slurmd
# waits for the node check again and stays down when it fails, as the kubelet does on EKS.
SLURMD_DROP_IN = (
    "[Unit]\nRequires=gpufleet-health.service\nAfter=gpufleet-health.service gpufleet-slurm-join.service\n"
    "[Service]\nTimeoutStartSec=infinity\n"
)
# What no run has shown: slurm-gres.py is tested on fake NVML and a mig-minors fixture only.
MIG_GRES_UNCONFIRMED = (
    "unconfirmed: MIG devices as Slurm GRES have not run on a MIG GPU: the node's gres.conf comes from NVML and "
    "/proc/driver/nvidia-caps/mig-minors as Slurm's NVML plugin reads them, its types named as mig-parted names "
    "the profile; a node whose devices differ from its profile does not join"
)
# How long a node waits for the head node to store the munge key (its first boot runs alongside the nodes').
KEY_WAIT_SECONDS = 900


def systemd_command(argv: list[str]) -> str:
    """argv as an ExecStart= line takes it: words with spaces in double quotes (systemd.service(5), "Command
    lines"); the words never hold quotes, backslashes, `%` or `$`, which it would read otherwise."""
    for word in argv:
        if any(c in word for c in '"\\%$'):
            raise ValueError(f"slurmd argument {word!r}: quotes, backslashes, % and $ are not taken")
    return " ".join(f'"{word}"' if " " in word else word for word in argv)


def registration_table(group: ResolvedGroup, server: str) -> str:
    """`<instance type> <zone> <slurmd command>` per type and zone of the group, the instance id a token."""
    lines = []
    for instance in group.known_types:
        for zone in group.zones:
            argv = slurmd_registration(group, instance, zone, INSTANCE_ID)
            command = [SLURMD, "--systemd", *argv[1:], "--conf-server", server]
            lines.append(f"{instance.name} {zone} {systemd_command(command)}")
    return "\n".join(lines) + "\n"


def node_join_files(group: ResolvedGroup, site: SlurmSite, cloud: str, head_address: str,
                    cloud_values: Mapping[str, str]) -> Files:
    """The files a node of `group` adds to its bootstrap to join the controller at `head_address`; cloud_values:
    the cloud's settings (its region and the munge key's secret)."""
    server = f"{head_address}:{site.slurmctld_port}"
    mig = mig_layout(group)
    if mig is not None:
        warn_unconfirmed(group.path("gpu_sharing"), MIG_GRES_UNCONFIRMED)
    settings = {"GPUFLEET_SLURM_SERVER": server, "GPUFLEET_SLURM_KEY_WAIT_SECONDS": str(KEY_WAIT_SECONDS),
                **cloud_values}
    return {
        f"{ETC}/slurm.env": ("0600", settings_text(settings)),
        f"{ETC}/slurmd-registration": ("0644", registration_table(group, server)),
        f"{LIB}/slurm-cloud.sh": ("0644", cloud_part(f"slurm-{cloud}.sh", cloud)),
        f"{SBIN}/gpufleet-slurm-join": ("0755", node_script("slurm-join.sh")),
        f"{ETC}/slurm-gres.json": ("0644", node_gres_plan(group, mig, site)),
        f"{SBIN}/gpufleet-slurm-gres": ("0755", node_script("slurm-gres.py")),
        f"{UNITS}/{JOIN_UNIT}": ("0644", node_script(JOIN_UNIT)),
        f"{UNITS}/slurmd.service.d/gpufleet.conf": ("0644", SLURMD_DROP_IN),
        site.health_check_program: ("0755", render_health_check(site)),
    }
