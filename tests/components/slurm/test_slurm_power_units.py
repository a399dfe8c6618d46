"""The head node's power files: power.json with the groups and partitions, ResumeProgram and SuspendProgram handing
slurmctld's hostlist to the power program, and the queue watcher's service and timer as systemd reads them."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

from slurm_daemons import site_in
from slurm_rootfs import systemd_verify
from slurm_stacks import second_group, slurm_cluster

from components.slurm.power import POWER_CONFIG
from components.slurm.power_units import UNITS, WATCH_SERVICE, WATCH_TIMER, power_unit_files
from components.slurm.site import SlurmSite
from gpufleet.resolve import resolve_cluster


def cluster_with_two_groups() -> dict:
    raw = slurm_cluster("aws-train-p5", partitions={"gpu": ["h100"], "spot": ["h100-spot"]})
    raw["node_groups"][0]["size"] = {"min": 0, "desired": 0, "max": 4}
    second_group(raw, "h100-spot", size={"min": 1, "desired": 1, "max": 8})
    return raw


def files_with_stub(tmp_path: Path) -> tuple[dict[str, tuple[str, str]], Path, SlurmSite]:
    """The files of a site whose power program is a stub logging its arguments."""
    stub = tmp_path / "gpufleet-slurm-power"
    stub.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/calls\n')
    stub.chmod(0o755)
    site = dataclasses.replace(site_in(tmp_path, "true"), power_command=str(stub))
    return power_unit_files(resolve_cluster(cluster_with_two_groups()), site), stub, site


def test_the_head_node_gets_the_config_the_programs_and_the_watcher(tmp_path: Path) -> None:
    files, _, site = files_with_stub(tmp_path)
    assert {path: mode for path, (mode, _) in files.items()} == {
        POWER_CONFIG: "0644", site.resume_program: "0755", site.suspend_program: "0755",
        f"{UNITS}/{WATCH_SERVICE}": "0644", f"{UNITS}/{WATCH_TIMER}": "0644"}
    assert json.loads(files[POWER_CONFIG][1]) == {
        "cloud": "aws", "region": "us-east-1", "partitions": {"gpu": ["h100"], "spot": ["h100-spot"]},
        "groups": [{"name": "h100", "scaling_group": "gpufleet-train-dev-h100", "min": 0, "max": 4},
                   {"name": "h100-spot", "scaling_group": "gpufleet-train-dev-h100-spot", "min": 1, "max": 8}]}


def test_the_programs_hand_slurmctlds_hostlist_to_the_power_program(tmp_path: Path) -> None:
    files, _, site = files_with_stub(tmp_path)
    for action, path in (("resume", site.resume_program), ("suspend", site.suspend_program)):
        program = tmp_path / action
        program.write_text(files[path][1])
        program.chmod(0o755)
        subprocess.run([str(program), "h100-i-0[1-2]"], check=True, timeout=10)
    assert (tmp_path / "calls").read_text().splitlines() == ["resume h100-i-0[1-2]", "suspend h100-i-0[1-2]"]


def test_systemd_takes_the_watchers_service_and_timer(tmp_path: Path) -> None:
    files, stub, _ = files_with_stub(tmp_path)
    units = []
    for name in (WATCH_SERVICE, WATCH_TIMER):
        unit = tmp_path / name
        unit.write_text(files[f"{UNITS}/{name}"][1])
        units.append(str(unit))
    verified = systemd_verify(tmp_path, *units)
    assert (verified.returncode, verified.stderr) == (0, "")
    assert f"ExecStart={stub} watch\n" in files[f"{UNITS}/{WATCH_SERVICE}"][1]
    assert "OnUnitActiveSec=30s\n" in files[f"{UNITS}/{WATCH_TIMER}"][1]
