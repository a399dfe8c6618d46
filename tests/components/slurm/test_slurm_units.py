"""The drop-ins over the image's Slurm units, as systemd reads them: SchedMD's slurmd.service and slurmctld.service
(slurm-smd 25.11.5, vendored in tests/data/slurm/schedmd-25.11.5 with their source) with the node's and the head
node's drop-ins, verified by the real `systemd-analyze verify` and merged into the settings systemd runs."""

from __future__ import annotations

from pathlib import Path

from conftest import REPO
from slurm_rootfs import systemd_verify
from slurm_stacks import slurm_cluster

from components.bootstrap.cloud_init import UNITS, node_script
from components.slurm.head_files import head_node_files, head_site
from components.slurm.node_files import INSTANCE_ID, node_join_files
from gpufleet.resolve import resolve_cluster

SCHEDMD_UNITS = REPO / "tests/data/slurm/schedmd-25.11.5"
HEAD_ADDRESS = "10.42.0.10"
# Keys systemd keeps as a list, an empty assignment emptying it (systemd.service(5)); the others: the last one wins.
LIST_KEYS = {"ExecStart", "Requires", "After", "RuntimeDirectory"}


def effective(unit: Path) -> dict[str, list[str]]:
    """The [Unit] and [Service] settings of `unit` with its drop-ins (`<unit>.d/*.conf`, in name order) applied."""
    settings: dict[str, list[str]] = {}
    for path in [unit, *sorted(unit.with_name(f"{unit.name}.d").glob("*.conf"))]:
        for line in path.read_text().splitlines():
            if not line or line.startswith(("#", "[")):
                continue
            key, value = line.split("=", 1)
            if not value:
                settings[key] = []
            elif key in LIST_KEYS:  # a command is one entry; the others are lists of words
                settings[key] = settings.get(key, []) + ([value] if key == "ExecStart" else value.split())
            else:
                settings[key] = [value]
    return settings


def install(units: Path, files: dict[str, tuple[str, str]]) -> None:
    """The rendered files under /etc/systemd/system, written into `units`."""
    for path, (_, content) in files.items():
        if path.startswith(f"{UNITS}/"):
            target = units / path.removeprefix(f"{UNITS}/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)


def test_a_nodes_slurmd_runs_under_systemd_as_schedmds_unit_expects(tmp_path: Path) -> None:
    group = resolve_cluster(slurm_cluster("aws-train-p5")).groups[0]
    files = node_join_files(group, head_site(), "aws", HEAD_ADDRESS,
                            {"GPUFLEET_SLURM_REGION": "us-east-1", "GPUFLEET_MUNGE_SECRET": "s"})
    units = tmp_path / "units"
    install(units, files)
    (units / "slurmd.service").write_text((SCHEDMD_UNITS / "slurmd.service").read_text())
    (units / "gpufleet-health.service").write_text(node_script("gpufleet-health.service"))
    # What slurm-join.sh writes at boot: the registration line of the node's type and zone as ExecStart.
    registration = files["/etc/gpufleet/slurmd-registration"][1].splitlines()[0].split(" ", 2)[2]
    command = registration.replace(INSTANCE_ID, "i-0123456789abcdef0")
    (units / "slurmd.service.d/gpufleet-registration.conf").write_text(
        f"[Service]\nExecStart=\nExecStart={command}\n")

    verified = systemd_verify(units, "slurmd.service")
    assert (verified.returncode, verified.stderr) == (0, "")
    settings = effective(units / "slurmd.service")
    assert settings["Type"] == ["notify"]
    assert settings["ExecStart"] == [command]
    # slurmd.c: --systemd is what sends READY=1 to a Type=notify unit; with -D slurmd exits ("mutually exclusive").
    argv = command.split()
    assert argv[:2] == ["/usr/sbin/slurmd", "--systemd"] and "-D" not in argv
    # It waits for slurmctld's configuration before it is ready: no start timeout kills it meanwhile.
    assert settings["TimeoutStartSec"] == ["infinity"]
    assert settings["RuntimeDirectory"] == ["slurm"] and "ConditionPathExists" not in settings
    assert {"gpufleet-health.service"} <= set(settings["Requires"])
    assert {"munge.service", "gpufleet-health.service", "gpufleet-slurm-join.service"} <= set(settings["After"])


def test_the_head_nodes_slurmctld_keeps_schedmds_start(tmp_path: Path) -> None:
    site = head_site()
    files = head_node_files(resolve_cluster(slurm_cluster("aws-train-p5")), site)
    units = tmp_path / "units"
    install(units, files)
    (units / "slurmctld.service").write_text((SCHEDMD_UNITS / "slurmctld.service").read_text())

    verified = systemd_verify(units, "slurmctld.service")
    assert (verified.returncode, verified.stderr) == (0, "")
    settings = effective(units / "slurmctld.service")
    assert settings["Type"] == ["notify"]
    assert settings["ExecStart"] == ["/usr/sbin/slurmctld --systemd $SLURMCTLD_OPTIONS"]
    assert settings["User"] == [site.slurm_user]
    # The unit starts only where slurm.conf is: the head node's own, written by its user data.
    (condition,) = settings["ConditionPathExists"]
    assert condition in files and condition == f"{site.etc_dir}/slurm.conf"
    assert "munge.service" in settings["Requires"] and "munge.service" in settings["After"]
