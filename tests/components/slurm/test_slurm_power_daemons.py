"""A dynamic node's life under the real daemons (slurm-wlm 25.11, tests/slurm_rootfs.py) and EC2 Auto Scaling (moto): a
job on an empty partition gets its node through the queue watcher and runs once a stand-in slurmd registers for the
instance; an idle node's name is deleted as its instance goes; a dead name slurmctld tries to resume sends its job
back to the queue; a spot interruption requeues the node's jobs and deletes its name.

slurmctld runs the rendered ResumeProgram and SuspendProgram itself, in its own bare environment; the power program
behind them is a stand-in recording the hostlist slurmctld passes, and the test runs the power program with that
hostlist against moto (moto answers in the test's process only)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from slurm_autoscaling import ASG, REGION, group_of, in_service, make_groups, run_aws
from slurm_daemons import SlurmCluster, missing_daemons, running_slurm, wait_for
from slurm_stacks import slurm_cluster

from components.slurm.power import GIVEN_BACK, render_power_config
from components.slurm.power_units import power_unit_files
from components.slurm.site import SlurmSite
from components.slurm.spot_leave import SPOT_REASON, render_spot_leave
from gpufleet.resolve import resolve_cluster

pytestmark = pytest.mark.waits  # on daemons and processes: scheduled first (tests/conftest.py)

RAW = slurm_cluster("aws-train-p5")
RAW["node_groups"][0]["size"] = {"min": 0, "desired": 0, "max": 4}


def power_shims(suspend_seconds: int | None = None, suspend_timeout: int = 5) -> Callable[[Path], None]:
    """An `edit` of running_slurm: the rendered ResumeProgram and SuspendProgram (they must exist when slurmctld
    starts, or it disables power saving) over a stand-in power program that records each hostlist in
    ROOT/<action>.called; optionally a short SuspendTime, with a short SuspendTimeout."""
    def edit(etc: Path) -> None:
        root = etc.parent
        stand_in = root / "power-program"
        stand_in.write_text(f'#!/bin/sh\necho "$2" >> {root}/"$1".called\n')
        stand_in.chmod(0o755)
        site = SlurmSite("head", "127.0.0.1", program_dir=str(root / "programs"), power_command=str(stand_in))
        files = power_unit_files(resolve_cluster(RAW), site)
        for path in (site.resume_program, site.suspend_program):
            mode, text = files[path]
            Path(path).write_text(text)
            Path(path).chmod(int(mode, 8))
        if suspend_seconds is not None:
            conf = etc / "slurm.conf"
            text = re.sub(r"SuspendTime=\d+", f"SuspendTime={suspend_seconds}", conf.read_text())
            conf.write_text(re.sub(r"SuspendTimeout=\d+", f"SuspendTimeout={suspend_timeout}", text))
    return edit


@contextmanager
def head_node(monkeypatch: pytest.MonkeyPatch,
              edit: Callable[[Path], None]) -> Iterator[tuple[SlurmCluster, Any, Path]]:
    """slurmctld with the shims, moto with the group's Auto Scaling group at size, and power.json."""
    assert not missing_daemons(), f"the Slurm root filesystem (.ci/run builds it): {missing_daemons()}"
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(key, "testing")
    cluster = resolve_cluster(RAW)
    with running_slurm(cluster, edit) as slurm, mock_aws():
        monkeypatch.setenv("SLURM_CONF", slurm.env["SLURM_CONF"])
        autoscaling = boto3.client("autoscaling", region_name=REGION)
        make_groups(autoscaling, RAW)
        config = slurm.root / "power.json"
        config.write_text(render_power_config(cluster))
        yield slurm, autoscaling, config


def called(slurm: SlurmCluster, action: str) -> str:
    record = slurm.root / f"{action}.called"
    wait_for(f"slurmctld to run {action}", record.exists, seconds=60)
    return record.read_text().split()[0]


def node_state(slurm: SlurmCluster, name: str) -> str:
    return slurm.run("sinfo", "-h", "-N", "-n", name, "-o", "%t").stdout.strip()


def job_state(slurm: SlurmCluster, job: str) -> str:
    return slurm.run("squeue", "-h", "-j", job, "-o", "%T").stdout.strip()


def test_a_job_on_an_empty_partition_gets_its_node_and_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with head_node(monkeypatch, power_shims()) as (slurm, autoscaling, config):
        out = tmp_path / "job.out"
        job = slurm.run("sbatch", "--parsable", "-N1", "-p", "h100", "-o", str(out),
                        "--wrap", "echo ran on $SLURMD_NODENAME").stdout.strip()
        wait_for("the job to wait", lambda: job_state(slurm, job) == "PENDING")
        assert run_aws(config, "watch") == 0
        assert group_of(autoscaling, ASG)["DesiredCapacity"] == 1
        [instance] = in_service(autoscaling, ASG)
        name = slurm.start_node(slurm.cluster.groups[0], instance)  # the instance's slurmd registers
        wait_for("the job to run", lambda: out.exists() and out.read_text().strip() != "", seconds=90)
        assert out.read_text().strip() == f"ran on {name}"


def test_an_idle_nodes_name_goes_with_its_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    with head_node(monkeypatch, power_shims(suspend_seconds=1)) as (slurm, autoscaling, config):
        autoscaling.set_desired_capacity(AutoScalingGroupName=ASG, DesiredCapacity=1)
        [instance] = in_service(autoscaling, ASG)
        name = slurm.start_node(slurm.cluster.groups[0], instance)
        hostlist = called(slurm, "suspend")  # SuspendTime passes: slurmctld powers the idle node down
        assert hostlist == name
        assert run_aws(config, "suspend", hostlist) == 0
        assert group_of(autoscaling, ASG)["DesiredCapacity"] == 0 and in_service(autoscaling, ASG) == []
        # The name is gone while slurmctld still counts the node as powering down: nothing to resume later.
        assert slurm.run("sinfo", "-h", "-N", "-o", "%N").stdout.strip() == ""


def test_a_dead_name_slurmctld_resumes_sends_its_job_back_to_the_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    with head_node(monkeypatch, power_shims(suspend_seconds=1, suspend_timeout=1)) as (slurm, autoscaling, config):
        autoscaling.set_desired_capacity(AutoScalingGroupName=ASG, DesiredCapacity=1)
        [instance] = in_service(autoscaling, ASG)
        name = slurm.start_node(slurm.cluster.groups[0], instance)
        called(slurm, "suspend")
        # The instance went but its name stayed (the deletion failed): after SuspendTimeout it is powered down.
        autoscaling.terminate_instance_in_auto_scaling_group(InstanceId=instance, ShouldDecrementDesiredCapacity=True)
        wait_for("the node to power down", lambda: node_state(slurm, name) == "idle~", seconds=30)
        job = slurm.run("sbatch", "--parsable", "-N1", "-p", "h100", "-o", "/dev/null", "--wrap", "true").stdout.strip()
        assert called(slurm, "resume") == name  # slurmctld picks the dead name for the job
        assert run_aws(config, "resume", name) == 0
        assert group_of(autoscaling, ASG)["DesiredCapacity"] == 1  # a fresh node instead
        assert f"Reason={GIVEN_BACK}" in slurm.node(name)
        wait_for("the job back in the queue", lambda: job_state(slurm, job) == "PENDING")
        assert run_aws(config, "watch") == 0
        assert slurm.run("sinfo", "-h", "-N", "-o", "%N").stdout.strip() == ""  # the dead name deleted
        assert group_of(autoscaling, ASG)["DesiredCapacity"] == 1  # the fresh node on its way covers the job
        slurm.run("scancel", job)


def test_a_spot_interruption_requeues_the_nodes_jobs_and_deletes_it(tmp_path: Path) -> None:
    assert not missing_daemons(), f"the Slurm root filesystem (.ci/run builds it): {missing_daemons()}"
    with running_slurm(resolve_cluster(RAW)) as slurm:
        name = slurm.start_node(slurm.cluster.groups[0], "i-0123456789abcdef0")
        leave = tmp_path / "gpufleet-slurm-leave"
        leave.write_text(render_spot_leave(slurm.site.etc_dir))
        leave.chmod(0o755)
        job = slurm.run("sbatch", "--parsable", "-N1", "-p", "h100", "-o", "/dev/null",
                        "--wrap", "sleep 600").stdout.strip()
        wait_for("the job to run", lambda: job_state(slurm, job) == "RUNNING", seconds=60)

        drained = subprocess.run([str(leave), "drain"], capture_output=True, text=True, timeout=30, check=False)
        assert drained.returncode == 0, drained.stderr
        shown = slurm.node(name)
        assert "DRAIN" in shown and f"Reason={SPOT_REASON}" in shown
        assert job_state(slurm, job) == "RUNNING"  # the checkpoint hook runs now, the job still on the node

        requeued = subprocess.run([str(leave), "requeue"], capture_output=True, text=True, timeout=60, check=False)
        assert requeued.returncode == 0, requeued.stderr
        assert job_state(slurm, job) == "PENDING"
        assert slurm.run("sinfo", "-h", "-N", "-o", "%N").stdout.strip() == ""
        slurm.run("scancel", job)
