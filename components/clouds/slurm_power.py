"""`gpufleet-slurm-power`, the head node's power program (components/slurm/power_program.py), over the GroupCapacity
of the cloud power.json names (each cloud's slurm_capacity.py, imported only there: the head node carries one
cloud's SDK)."""

from __future__ import annotations

import os
import sys
from importlib import import_module

from components.slurm.power import GroupCapacity, PowerConfig
from components.slurm.power_program import run_program

# The clouds with a slurm_capacity.py; each imported by name, only the one power.json names (the head node carries
# one cloud's SDK), as gpufleet.clouds.lookup imports backends.
POWER_CLOUDS = ("aws", "azure", "alicloud")


def capacity_for(config: PowerConfig) -> GroupCapacity:
    """The scaling groups of the cloud and region of power.json."""
    if config.cloud not in POWER_CLOUDS:
        raise ValueError(f"power.json cloud: {config.cloud!r} is none of {', '.join(POWER_CLOUDS)}")
    capacity: GroupCapacity = import_module(f"{__package__}.{config.cloud}.slurm_capacity").capacity_in(config.region)
    return capacity


# Where power.json is read from instead of the head node's path (power.POWER_CONFIG), e.g. to run the program by hand
# against another cluster's file.
CONFIG_VARIABLE = "GPUFLEET_SLURM_POWER_CONFIG"


def main() -> int:
    """Exit 1 with the reason on one line (slurmctld's log, the journal) for a node of no group or a group the cloud
    lacks; other failures (the cloud's refusals) keep their SDK's traceback."""
    try:
        return run_program(sys.argv[1:], capacity_for, os.environ.get(CONFIG_VARIABLE))
    except (LookupError, ValueError) as error:
        print(f"gpufleet-slurm-power: {error}", file=sys.stderr)
        return 1
