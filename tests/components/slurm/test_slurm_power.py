"""ResumeProgram, SuspendProgram and the queue watcher against EC2 Auto Scaling (moto) and a real slurmctld (25.11):
the group behind each node name gets the desired capacity the queue asks for, within size.min..max, suspending gives
back the very instances Slurm named, and the names it touches are changed in Slurm itself."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from slurm_autoscaling import ASG, REGION, SPOT_ASG, group_of, in_service, make_groups, run_aws
from slurm_daemons import SlurmCluster, missing_daemons, running_slurm
from slurm_stacks import second_group, slurm_cluster

from components.clouds import slurm_power
from components.clouds.aws.slurm_capacity import AutoScalingCapacity
from components.slurm import power_program
from components.slurm.power import render_power_config
from components.slurm.power_program import run_program
from gpufleet.resolve import resolve_cluster


def two_groups(size: dict[str, int]) -> dict[str, Any]:
    """The p5 stack with groups h100 and h100-spot of `size`, a partition each."""
    raw = slurm_cluster("aws-train-p5", partitions={"h100": ["h100"], "spot": ["h100-spot"]})
    raw["node_groups"][0]["size"] = size
    second_group(raw, "h100-spot", size=copy.deepcopy(size))
    return raw


@pytest.fixture(scope="module")
def slurm() -> Iterator[SlurmCluster]:
    assert not missing_daemons(), f"the Slurm root filesystem (.ci/run builds it): {missing_daemons()}"
    with running_slurm(resolve_cluster(two_groups({"min": 0, "desired": 0, "max": 16}))) as running:
        yield running


@pytest.fixture
def autoscaling(monkeypatch: pytest.MonkeyPatch, slurm: SlurmCluster) -> Iterator[Any]:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(key, "testing")
    # The programs' scontrol, squeue and sinfo talk to the test's slurmctld.
    monkeypatch.setenv("SLURM_CONF", slurm.env["SLURM_CONF"])
    with mock_aws():
        yield boto3.client("autoscaling", region_name=REGION)


def _head_node(tmp_path: Path, size: dict[str, int], autoscaling: Any) -> Path:
    """The head node's power.json; each group's Auto Scaling group made at its desired size."""
    raw = two_groups(size)
    make_groups(autoscaling, raw)
    config = tmp_path / "power.json"
    config.write_text(render_power_config(resolve_cluster(raw)))
    return config


def test_resume_raises_the_desired_capacity_of_each_named_group(tmp_path: Path, autoscaling: Any) -> None:
    config = _head_node(tmp_path, {"min": 0, "desired": 1, "max": 16}, autoscaling)
    assert run_aws(config, "resume", "h100-n[1-3],h100-spot-n1") == 0
    assert group_of(autoscaling, ASG)["DesiredCapacity"] == 4
    assert group_of(autoscaling, SPOT_ASG)["DesiredCapacity"] == 2


def test_resume_stops_at_size_max(tmp_path: Path, autoscaling: Any) -> None:
    config = _head_node(tmp_path, {"min": 0, "desired": 2, "max": 4}, autoscaling)
    assert run_aws(config, "resume", "h100-n[1-9]") == 0
    assert group_of(autoscaling, ASG)["DesiredCapacity"] == 4
    assert group_of(autoscaling, SPOT_ASG)["DesiredCapacity"] == 2


def test_suspend_gives_back_the_named_instances_down_to_size_min_and_replaces_the_rest(
        tmp_path: Path, autoscaling: Any, capsys: pytest.CaptureFixture[str]) -> None:
    config = _head_node(tmp_path, {"min": 1, "desired": 3, "max": 4}, autoscaling)
    members = in_service(autoscaling, ASG)
    hostlist = ",".join(f"h100-{instance_id}" for instance_id in members)
    assert run_aws(config, "suspend", hostlist) == 0
    # Two go with the desired capacity; the third is at size.min: it goes too and the group launches a fresh node,
    # which registers under its own name (a powered-down name never comes back under 22.05).
    assert group_of(autoscaling, ASG)["DesiredCapacity"] == 1
    assert not set(in_service(autoscaling, ASG)) & set(members)
    assert json.loads(capsys.readouterr().out) == {
        "suspend": {"h100": {"given_back": members[:2], "replaced": members[2:]}}}


def test_suspend_refuses_an_instance_of_another_group(tmp_path: Path, autoscaling: Any) -> None:
    config = _head_node(tmp_path, {"min": 0, "desired": 1, "max": 4}, autoscaling)
    spot_instance = group_of(autoscaling, SPOT_ASG)["Instances"][0]["InstanceId"]
    with pytest.raises(LookupError, match=f"{spot_instance} not in Auto Scaling group {ASG}"):
        run_aws(config, "suspend", f"h100-{spot_instance}")
    assert group_of(autoscaling, SPOT_ASG)["DesiredCapacity"] == 1


def test_a_node_of_no_group_is_named(tmp_path: Path, autoscaling: Any) -> None:
    config = _head_node(tmp_path, {"min": 0, "desired": 1, "max": 4}, autoscaling)
    with pytest.raises(ValueError, match="node a100-n1 belongs to no node group"):
        run_aws(config, "resume", "a100-n1")


def test_a_job_on_an_empty_partition_raises_its_group_and_only_once(tmp_path: Path, autoscaling: Any,
                                                                    slurm: SlurmCluster) -> None:
    config = _head_node(tmp_path, {"min": 0, "desired": 0, "max": 4}, autoscaling)
    submitted = slurm.run("sbatch", "--parsable", "-N2", "-p", "spot", "-o", "/dev/null", "--wrap", "true")
    held = slurm.run("sbatch", "--parsable", "-H", "-N3", "-p", "h100", "-o", "/dev/null", "--wrap", "true")
    try:
        assert run_aws(config, "watch") == 0
        assert run_aws(config, "watch") == 0  # the two nodes on their way count: no second raise
        assert group_of(autoscaling, SPOT_ASG)["DesiredCapacity"] == 2
        assert group_of(autoscaling, ASG)["DesiredCapacity"] == 0  # a held job waits for a person, not nodes
    finally:
        slurm.run("scancel", submitted.stdout.strip(), held.stdout.strip())


def run_main(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, autoscaling: Any, *args: str) -> int:
    """`gpufleet-slurm-power ARGS` as installed, with power.json of empty groups of at most 4."""
    config = _head_node(tmp_path, {"min": 0, "desired": 0, "max": 4}, autoscaling)
    monkeypatch.setattr(power_program, "POWER_CONFIG", str(config))
    monkeypatch.setattr("sys.argv", ["gpufleet-slurm-power", *args])
    return slurm_power.main()


def test_the_power_program_picks_the_cloud_of_the_power_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               autoscaling: Any,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert run_main(tmp_path, monkeypatch, autoscaling, "resume", "h100-n[1-2]") == 0
    assert group_of(autoscaling, ASG)["DesiredCapacity"] == 2
    assert capsys.readouterr().out.strip() == '{"resume": {"h100": 2}}'


def test_the_power_program_names_a_node_of_no_group_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                autoscaling: Any,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert run_main(tmp_path, monkeypatch, autoscaling, "resume", "a100-n1") == 1
    assert capsys.readouterr().err == (
        "gpufleet-slurm-power: node a100-n1 belongs to no node group (h100, h100-spot)\n")


def test_a_wrong_call_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_program(["stop", "h100-n1"], lambda c: AutoScalingCapacity(None), str(tmp_path / "none")) == 2
    assert run_program(["watch", "h100-n1"], lambda c: AutoScalingCapacity(None), str(tmp_path / "none")) == 2
    assert capsys.readouterr().out.splitlines() == ["usage: resume HOSTLIST | suspend HOSTLIST | watch"] * 2
