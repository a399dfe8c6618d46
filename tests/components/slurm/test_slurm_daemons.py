"""The rendered Slurm configuration under the real daemons (Ubuntu resolute's slurm-wlm 25.11 and munge,
tests/slurm_rootfs.py): a dynamic node registers with its features and GPUs, jobs run, and a failing node check
drains the node. The topology: test_slurm_topology_daemons.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurm_daemons import (
    SlurmCluster,
    alive,
    missing_daemons,
    processes_where,
    running_slurm,
    wait_for,
    with_descendants,
    works_in,
)
from slurm_stacks import SLURM_STACKS, slurm_cluster

from components.slurm.gres_conf import gpu_type
from gpufleet.resolve import resolve_cluster

pytestmark = pytest.mark.waits  # on daemons and processes: scheduled first (tests/conftest.py)

INSTANCE_ID = "i-0123456789abcdef0"


@pytest.fixture(scope="module")
def p5() -> Iterator[SlurmCluster]:
    assert not missing_daemons(), f"the Slurm root filesystem (.ci/run builds it): {missing_daemons()}"
    with running_slurm(resolve_cluster(slurm_cluster("aws-train-p5", suspend_after_minutes=45))) as running:
        running.start_node(running.cluster.groups[0], INSTANCE_ID, configless=True)
        yield running


def test_the_dynamic_node_registers_with_its_features_and_gpus(p5: SlurmCluster) -> None:
    shown = p5.node(f"h100-{INSTANCE_ID}")
    assert "AvailableFeatures=h100,p5.48xlarge,efa,us-east-1a" in shown
    assert "Gres=gpu:h100:8" in shown
    assert "Partitions=h100" in shown


def test_the_controller_runs_with_the_stacks_settings(p5: SlurmCluster) -> None:
    shown = dict(line.split(" = ", 1) for line in p5.run("scontrol", "show", "config").stdout.splitlines()
                 if " = " in line)
    settings = {key.strip(): value.strip() for key, value in shown.items()}
    assert {key: settings[key] for key in ("ClusterName", "AuthType", "SelectType", "GresTypes", "MaxNodeCount",
                                           "SuspendTime", "SuspendProgram", "ResumeProgram",
                                           "HealthCheckProgram")} == {
        "ClusterName": "train-dev", "AuthType": "auth/munge", "SelectType": "select/cons_tres", "GresTypes": "gpu",
        "MaxNodeCount": "16", "SuspendTime": "2700 sec", "SuspendProgram": p5.site.suspend_program,
        "ResumeProgram": p5.site.resume_program, "HealthCheckProgram": p5.site.health_check_program,
    }


def test_srun_runs_on_the_node_with_its_gpus(p5: SlurmCluster) -> None:
    done = p5.run("srun", "-N1", "--gres=gpu:h100:8", "sh", "-c", "hostname; echo $CUDA_VISIBLE_DEVICES")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "0,1,2,3,4,5,6,7"


def test_an_sbatch_job_runs(p5: SlurmCluster, tmp_path: Path) -> None:
    out = tmp_path / "job.out"
    done = p5.run("sbatch", "--parsable", "-N1", "-p", "h100", "-o", str(out), "--wrap", "echo ran on $SLURMD_NODENAME")
    assert done.returncode == 0, done.stderr
    assert p5.job_end(done.stdout.strip()) == ("COMPLETED", "0:0")
    assert out.read_text().strip() == f"ran on h100-{INSTANCE_ID}"


def test_a_failing_node_check_drains_the_node_and_marks_it_for_replacement_once_idle(p5: SlurmCluster) -> None:
    name = f"h100-{INSTANCE_ID}"
    mark = Path(p5.site.unhealthy_mark)
    job = p5.run("sbatch", "--parsable", "-o", "/dev/null", "-w", name, "--wrap", "sleep 60").stdout.strip()
    wait_for("the job", lambda: "State=RUNNING" in p5.run("scontrol", "show", "job", job).stdout)
    (p5.root / "node-check.status").unlink()
    try:
        wait_for("the drain", lambda: "DRAIN" in p5.node(name), seconds=30)
        assert "Reason=gpufleet node check failed" in p5.node(name)
        # The running job keeps its node: no replacement while it runs.
        time.sleep(2 * p5.site.health_check_seconds + 1)
        assert not mark.exists()
        p5.run("scancel", job)
        wait_for("the unhealthy mark", mark.exists, seconds=30)
    finally:
        (p5.root / "node-check.status").write_text("pass")
        mark.unlink(missing_ok=True)
        p5.run("scontrol", "update", f"NodeName={name}", "State=RESUME")


def test_a_clusters_job_steps_end_with_it() -> None:
    # slurmstepd outlives slurmd: a step left running would outlive the test, in the thrown-away directory.
    with running_slurm(resolve_cluster(slurm_cluster("aws-train-p5"))) as running:
        name = running.start_node(running.cluster.groups[0], "n1")
        job = running.run("sbatch", "--parsable", "-o", "/dev/null", "-w", name, "--wrap", "sleep 600").stdout.strip()
        wait_for("the job", lambda: "JobState=RUNNING" in running.run("scontrol", "show", "job", job).stdout)

        def batch_step() -> list[int]:
            batch = f"[{job}.batch]"
            return with_descendants(processes_where(
                lambda process: batch in (process / "cmdline").read_text() and works_in(process, running.root)))

        # slurmctld says RUNNING once it has launched the job, before slurmstepd has forked the script (CI saw one).
        wait_for("slurmstepd and the batch script it runs", lambda: len(batch_step()) >= 2)
        steps = batch_step()
    assert [pid for pid in steps if alive(pid)] == []


@pytest.mark.parametrize("stack", sorted(SLURM_STACKS))
def test_each_shipped_vm_stack_turned_slurm_runs_a_gpu_job(stack: str) -> None:
    cluster = resolve_cluster(slurm_cluster(stack))
    with running_slurm(cluster) as running:
        group = cluster.groups[0]
        instance = group.known_types[0]
        gres = f"gpu:{gpu_type(instance)}:{instance.gpu.count}"
        name = running.start_node(group, "n1")
        assert f"Gres={gres}" in running.node(name)
        assert running.run("sinfo", "-h", "-o", "%P").stdout.split() == [f"{group.name}*"]
        # Every GPU by its device file in the rendered gres.conf: the job sees them all.
        done = running.run("srun", "-N1", f"--gres={gres}", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES")
        assert done.stdout.split() == [",".join(map(str, range(instance.gpu.count)))], done.stderr
