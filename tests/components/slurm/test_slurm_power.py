"""ResumeProgram and SuspendProgram against EC2 Auto Scaling (moto): the group behind each node name gets the desired
capacity the queue asks for, within size.min..max, and suspending gives back the very instances Slurm named."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from slurm_daemons import site_in
from slurm_stacks import second_group, slurm_cluster

from components.clouds.aws import slurm_capacity
from components.clouds.aws.slurm_capacity import AutoScalingCapacity
from components.slurm import power
from components.slurm.power import render_power_config, run_program
from components.slurm.slurm_conf import render_slurm_conf
from gpufleet.resolve import resolve_cluster

REGION = "us-east-1"


@pytest.fixture
def autoscaling(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(key, "testing")
    with mock_aws():
        yield boto3.client("autoscaling", region_name=REGION)


def _head_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: dict[str, int], autoscaling: Any) -> Path:
    """The head node's power.json and slurm.conf (scontrol expands the hostlists with it); each group's Auto Scaling
    group made at its desired size."""
    raw = slurm_cluster("aws-train-p5", partitions={"h100": ["h100"], "spot": ["h100-spot"]})
    raw["node_groups"][0]["size"] = size
    second_group(raw, "h100-spot", size=copy.deepcopy(size))
    cluster = resolve_cluster(raw)
    ec2 = boto3.client("ec2", region_name=REGION)
    template = ec2.create_launch_template(LaunchTemplateName="nodes", LaunchTemplateData={
        "ImageId": "ami-12c6146b", "InstanceType": "p5.48xlarge"})["LaunchTemplate"]["LaunchTemplateId"]
    for group in cluster.groups:
        autoscaling.create_auto_scaling_group(
            AutoScalingGroupName=group.names["scaling_group"], LaunchTemplate={"LaunchTemplateId": template},
            MinSize=size["min"], MaxSize=size["max"], DesiredCapacity=size["desired"], AvailabilityZones=["us-east-1a"])
    site = site_in(tmp_path, "true")
    (tmp_path / "slurm.conf").write_text(render_slurm_conf(cluster, site))
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "slurm.conf"))
    config = tmp_path / "power.json"
    config.write_text(render_power_config(cluster))
    return config


def _group(autoscaling: Any, name: str) -> dict[str, Any]:
    return autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"][0]


def _run(config: Path, *args: str) -> int:
    return run_program(args, lambda region: AutoScalingCapacity(boto3.client("autoscaling", region_name=region)),
                       str(config))


ASG = "gpufleet-train-dev-h100"
SPOT_ASG = "gpufleet-train-dev-h100-spot"


def test_resume_raises_the_desired_capacity_of_each_named_group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                autoscaling: Any) -> None:
    config = _head_node(tmp_path, monkeypatch, {"min": 0, "desired": 1, "max": 16}, autoscaling)
    assert _run(config, "resume", "h100-n[1-3],h100-spot-n1") == 0
    assert _group(autoscaling, ASG)["DesiredCapacity"] == 4
    assert _group(autoscaling, SPOT_ASG)["DesiredCapacity"] == 2


def test_resume_stops_at_size_max(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, autoscaling: Any) -> None:
    config = _head_node(tmp_path, monkeypatch, {"min": 0, "desired": 2, "max": 4}, autoscaling)
    assert _run(config, "resume", "h100-n[1-9]") == 0
    assert _group(autoscaling, ASG)["DesiredCapacity"] == 4
    assert _group(autoscaling, SPOT_ASG)["DesiredCapacity"] == 2


def test_suspend_gives_back_the_named_instances_down_to_size_min(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  autoscaling: Any) -> None:
    config = _head_node(tmp_path, monkeypatch, {"min": 1, "desired": 3, "max": 4}, autoscaling)
    members = sorted(instance["InstanceId"] for instance in _group(autoscaling, ASG)["Instances"])
    hostlist = ",".join(f"h100-{instance_id}" for instance_id in members)
    assert _run(config, "suspend", hostlist) == 0
    group = _group(autoscaling, ASG)
    assert group["DesiredCapacity"] == 1
    kept = [instance["InstanceId"] for instance in group["Instances"]
            if instance["LifecycleState"] not in ("Terminating", "Terminated")]
    assert kept == [members[2]]


def test_suspend_refuses_an_instance_of_another_group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      autoscaling: Any) -> None:
    config = _head_node(tmp_path, monkeypatch, {"min": 0, "desired": 1, "max": 4}, autoscaling)
    spot_instance = _group(autoscaling, SPOT_ASG)["Instances"][0]["InstanceId"]
    with pytest.raises(LookupError, match=f"{spot_instance} not in Auto Scaling group {ASG}"):
        _run(config, "suspend", f"h100-{spot_instance}")
    assert _group(autoscaling, SPOT_ASG)["DesiredCapacity"] == 1


def test_a_node_of_no_group_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, autoscaling: Any) -> None:
    config = _head_node(tmp_path, monkeypatch, {"min": 0, "desired": 1, "max": 4}, autoscaling)
    with pytest.raises(ValueError, match="node a100-n1 belongs to no node group"):
        _run(config, "resume", "a100-n1")


def test_the_aws_program_reads_the_power_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 autoscaling: Any, capsys: pytest.CaptureFixture[str]) -> None:
    config = _head_node(tmp_path, monkeypatch, {"min": 0, "desired": 0, "max": 4}, autoscaling)
    monkeypatch.setattr(power, "POWER_CONFIG", str(config))
    monkeypatch.setattr("sys.argv", ["gpufleet-slurm-power", "resume", "h100-n[1-2]"])
    assert slurm_capacity.main() == 0
    assert _group(autoscaling, ASG)["DesiredCapacity"] == 2
    assert capsys.readouterr().out.strip() == '{"resume": {"h100": 2}}'


def test_a_wrong_call_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_program(["stop", "h100-n1"], lambda region: AutoScalingCapacity(None), str(tmp_path / "none")) == 2
    assert capsys.readouterr().out.strip() == "usage: resume|suspend HOSTLIST"
