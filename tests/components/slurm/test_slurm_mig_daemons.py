"""MIG devices as GRES under the real daemons (tests/slurm_rootfs.py): a dynamic node of a MIG group registers with
the MultipleFiles lines its boot wrote (scripts/slurm-gres.py from the fake NVML and a mig-minors fixture, stand-in
/dev/nvidiaN and /dev/nvidia-caps/nvidia-capM devices), a job asking for one MIG device runs and sees it, and a node
whose MIG layout differs from what it registers takes no jobs."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
from fake_mig import mig_minors, mig_nvml, one_g_devices, slurm_gres_script
from slurm_daemons import SlurmCluster, missing_daemons, running_slurm, wait_for
from slurm_stacks import slurm_cluster

from components.bootstrap.for_group import mig_layout
from components.slurm.gres_conf import node_gres_plan
from components.slurm.registration import slurmd_registration
from gpufleet.resolve import resolve_cluster

pytestmark = pytest.mark.waits  # on daemons and processes: scheduled first (tests/conftest.py)

GOOD, BAD = "i-0aaaaaaaaaaaaaaa1", "i-0bbbbbbbbbbbbbbb2"


def _write_node_gres(running: SlurmCluster, per_gpu: int) -> str:
    """What slurm-gres.py writes on a p5 node whose 8 GPUs each carry `per_gpu` 1g.10gb devices, taken as they are
    (the script refuses any but 7: the node registers 56); the text."""
    group = running.cluster.groups[0]
    plan = json.loads(node_gres_plan(group, mig_layout(group), running.site))
    minors = running.root / "mig-minors"
    minors.write_text(mig_minors(8))
    wanted = {"1g.10gb": 8 * per_gpu}
    text = slurm_gres_script().node_gres({**plan, "types": {"p5.48xlarge": {"mig": wanted}}}, "p5.48xlarge",
                                         mig_nvml(one_g_devices(8, per_gpu)), str(minors))
    Path(plan["path"]).write_text(text)
    return text


def _mig_cluster() -> AbstractContextManager[SlurmCluster]:
    assert not missing_daemons(), f"the Slurm root filesystem (.ci/run builds it): {missing_daemons()}"
    raw = slurm_cluster("aws-train-p5")
    raw["node_groups"][0].update(rdma="off", gpu_sharing={"mode": "mig", "mig_profile": "all-1g.10gb"})
    return running_slurm(resolve_cluster(raw))


def _stand_in_caps(running: SlurmCluster) -> None:
    caps = running.root / "dev/nvidia-caps"
    caps.mkdir()
    for minor in range(3, 3 + 2 * 8 * 14):  # every capability mig_minors(8) names
        os.mknod(caps / f"nvidia-cap{minor}", 0o600 | 0o020000, os.makedev(1, 3))


@pytest.fixture(scope="module")
def mig_p5() -> Iterator[SlurmCluster]:
    with _mig_cluster() as running:
        _stand_in_caps(running)
        _write_node_gres(running, 7)
        running.start_node(running.cluster.groups[0], GOOD, configless=True)
        yield running


def test_the_node_registers_its_mig_devices(mig_p5: SlurmCluster) -> None:
    shown = mig_p5.node(f"h100-{GOOD}")
    assert "Gres=gpu:1g.10gb:56" in shown
    assert "State=IDLE" in shown


def test_a_job_step_gets_one_mig_device(mig_p5: SlurmCluster) -> None:
    done = mig_p5.run("srun", "-N1", "--gres=gpu:1g.10gb:1", "sh", "-c",
                      "echo $CUDA_VISIBLE_DEVICES $SLURM_STEP_GPUS; scontrol show job -d $SLURM_JOB_ID")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[:2] == ["0", "0"]
    assert "GRES=gpu:1g.10gb:1(IDX:0)" in done.stdout


def test_a_node_whose_mig_layout_differs_takes_no_jobs() -> None:
    # The join stops before slurmd where slurm-gres.py finds other devices (test_slurm_mig_gres.py); were slurmd
    # started with fewer devices than it registers, slurmctld itself keeps jobs off the node.
    with _mig_cluster() as running:
        _stand_in_caps(running)
        _write_node_gres(running, 6)  # 48 of the 56 devices the node registers
        group = running.cluster.groups[0]
        argv = slurmd_registration(group, group.known_types[0], group.zones[0], BAD)
        done = running.run(*argv)
        assert done.returncode == 0, done.stderr
        name = f"h100-{BAD}"
        wait_for(f"node {name}", lambda: "INVALID_REG" in running.node(name))
        shown = running.node(name)
        assert "+DRAIN+" in shown and "Reason=gres/gpu count reported lower than configured (48 < 56)" in shown
        done = running.run("srun", "-N1", "-w", name, "--immediate=5", "--gres=gpu:1g.10gb:1", "true")
        assert done.returncode != 0
