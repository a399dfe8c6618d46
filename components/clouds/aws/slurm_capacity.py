"""The AWS side of Slurm's power programs (components/slurm/power.py): a node group's Auto Scaling group, through
the Auto Scaling API (SetDesiredCapacity; TerminateInstanceInAutoScalingGroup, whose ShouldDecrementDesiredCapacity
says whether the group replaces the instance Slurm found idle). The head node's role may call these on the
cluster's groups only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class AutoScalingCapacity:
    """GroupCapacity over EC2 Auto Scaling groups."""

    def __init__(self, client: Any) -> None:
        self.client = client
        """A boto3 `autoscaling` client of the cluster's region."""

    def desired(self, scaling_group: str) -> int:
        found = self.client.describe_auto_scaling_groups(AutoScalingGroupNames=[scaling_group])["AutoScalingGroups"]
        if not found:
            raise LookupError(f"Auto Scaling group {scaling_group} not found")
        return int(found[0]["DesiredCapacity"])

    def set_desired(self, scaling_group: str, desired: int) -> None:
        # HonorCooldown false: a job waiting for nodes is not held back by the group's cooldown.
        self.client.set_desired_capacity(AutoScalingGroupName=scaling_group, DesiredCapacity=desired,
                                         HonorCooldown=False)

    def give_back(self, scaling_group: str, instance_ids: Sequence[str], lower_desired: bool) -> None:
        found = self.client.describe_auto_scaling_groups(AutoScalingGroupNames=[scaling_group])["AutoScalingGroups"]
        members = {instance["InstanceId"] for group in found for instance in group["Instances"]}
        strangers = [instance_id for instance_id in instance_ids if instance_id not in members]
        if strangers:
            raise LookupError(f"{', '.join(strangers)} not in Auto Scaling group {scaling_group}")
        for instance_id in instance_ids:
            self.client.terminate_instance_in_auto_scaling_group(InstanceId=instance_id,
                                                                 ShouldDecrementDesiredCapacity=lower_desired)


def capacity_in(region: str) -> AutoScalingCapacity:
    """The Auto Scaling groups of `region`, with the head node's instance profile."""
    import boto3

    return AutoScalingCapacity(boto3.client("autoscaling", region_name=region))
