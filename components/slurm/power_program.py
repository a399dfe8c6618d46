"""The head node's one power program: `resume HOSTLIST` and `suspend HOSTLIST` (ResumeProgram and SuspendProgram,
power.py) and `watch` (the queue watcher's timer, queue_watch.py), over the GroupCapacity of the cloud and region
power.json names. Prints what it changed, for slurmctld's log and the journal."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from . import controller
from .power import POWER_CONFIG, GroupCapacity, PowerConfig, read_power_config, resume, suspend
from .queue_watch import watch

USAGE = "usage: resume HOSTLIST | suspend HOSTLIST | watch"


def run_program(args: Sequence[str], capacity_for: Callable[[PowerConfig], GroupCapacity],
                config_path: str | None = None) -> int:
    """Run one action; 2 with the usage for a wrong call."""
    action = args[0] if args else ""
    if (action, len(args)) not in (("resume", 2), ("suspend", 2), ("watch", 1)):
        print(USAGE)
        return 2
    config = read_power_config(config_path or POWER_CONFIG)
    capacity = capacity_for(config)
    done: object
    if action == "watch":
        done = watch(config, capacity)
    else:
        names = controller.expand_hostlist(args[1])
        done = (resume if action == "resume" else suspend)(names, config.groups, capacity)
    print(json.dumps({action: done}, sort_keys=True))
    return 0
