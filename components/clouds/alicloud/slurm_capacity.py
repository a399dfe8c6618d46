"""The Alibaba Cloud side of Slurm's power programs (components/slurm/power.py): a node group's ESS scaling group,
through the official SDK (alibabacloud_ess20220222): DescribeScalingGroups by the group's name (the programs know
names, ESS acts on ids), ModifyScalingGroup DesiredCapacity, and RemoveInstances of the named ECS instances with
DecreaseDesiredCapacity saying whether the group replaces them (RemovePolicy release: the instance goes).
A node's name ends in its ECS instance id (i-...), what RemoveInstances takes.

The head node signs with its instance RAM role (alibabacloud_credentials' ecs_ram_role, the role's name read from
the metadata service) and reads that role's STS credentials only with a metadata session token (disable_imds_v1): the
head node's metadata is in hardened mode (slurm_head.py http_tokens required), and without it the library falls back
to a plain GET when the token's PUT fails (alibabacloud_credentials 1.0.12 provider/ecs_ram_role.py
_get_metadata_token, _should_fallback_to_imds_v1).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class ScalingGroupCapacity:
    """GroupCapacity over the ESS scaling groups of one region."""

    def __init__(self, client: Any, region: str) -> None:
        self.client = client
        """An alibabacloud_ess20220222 Client."""
        self.region = region

    def _group(self, scaling_group: str) -> Any:
        from alibabacloud_ess20220222.models import DescribeScalingGroupsRequest

        found = self.client.describe_scaling_groups(DescribeScalingGroupsRequest(
            region_id=self.region, scaling_group_name=scaling_group)).body.scaling_groups
        if not found:
            raise LookupError(f"ESS scaling group {scaling_group} not found in {self.region}")
        return found[0]

    def desired(self, scaling_group: str) -> int:
        return int(self._group(scaling_group).desired_capacity)

    def set_desired(self, scaling_group: str, desired: int) -> None:
        from alibabacloud_ess20220222.models import ModifyScalingGroupRequest

        group_id = self._group(scaling_group).scaling_group_id
        self.client.modify_scaling_group(ModifyScalingGroupRequest(scaling_group_id=group_id,
                                                                   desired_capacity=desired))

    def give_back(self, scaling_group: str, instance_ids: Sequence[str], lower_desired: bool) -> None:
        from alibabacloud_ess20220222.models import RemoveInstancesRequest

        group_id = self._group(scaling_group).scaling_group_id
        self.client.remove_instances(RemoveInstancesRequest(
            region_id=self.region, scaling_group_id=group_id, instance_ids=list(instance_ids),
            decrease_desired_capacity=lower_desired, remove_policy="release"))


def capacity_in(region: str) -> ScalingGroupCapacity:
    """The scaling groups of `region`, with the head node's instance RAM role."""
    from alibabacloud_credentials.client import Client as CredentialClient
    from alibabacloud_credentials.models import Config as CredentialConfig
    from alibabacloud_ess20220222.client import Client
    from alibabacloud_tea_openapi.utils_models import Config

    role = CredentialClient(CredentialConfig(type="ecs_ram_role", disable_imds_v1=True))
    return ScalingGroupCapacity(Client(Config(credential=role, region_id=region)), region)
