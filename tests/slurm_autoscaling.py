"""Auto Scaling groups (moto) behind the Slurm power programs: made at each group's size, read back, and the power
program run against them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3

from components.clouds.aws.slurm_capacity import AutoScalingCapacity
from components.slurm.power_program import run_program
from gpufleet.resolve import resolve_cluster

REGION = "us-east-1"
ASG = "gpufleet-train-dev-h100"
SPOT_ASG = "gpufleet-train-dev-h100-spot"


def make_groups(autoscaling: Any, raw: dict[str, Any]) -> None:
    """Each group's Auto Scaling group, made at its size."""
    ec2 = boto3.client("ec2", region_name=REGION)
    template = ec2.create_launch_template(LaunchTemplateName="nodes", LaunchTemplateData={
        "ImageId": "ami-12c6146b", "InstanceType": "p5.48xlarge"})["LaunchTemplate"]["LaunchTemplateId"]
    for group in resolve_cluster(raw).groups:
        size = group.spec.size
        autoscaling.create_auto_scaling_group(
            AutoScalingGroupName=group.names["scaling_group"], LaunchTemplate={"LaunchTemplateId": template},
            MinSize=size.min, MaxSize=size.max, DesiredCapacity=size.desired, AvailabilityZones=["us-east-1a"])


def group_of(autoscaling: Any, name: str) -> dict[str, Any]:
    return autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"][0]


def in_service(autoscaling: Any, name: str) -> list[str]:
    """The group's instances not on their way out."""
    return sorted(instance["InstanceId"] for instance in group_of(autoscaling, name)["Instances"]
                  if instance["LifecycleState"] not in ("Terminating", "Terminated"))


def run_aws(config: Path, *args: str) -> int:
    """The power program over the Auto Scaling groups of power.json's region."""
    return run_program(args, lambda c: AutoScalingCapacity(boto3.client("autoscaling", region_name=c.region)),
                       str(config))
