"""AWS behind the backend protocol: its stack models and checks, capabilities, EFA layout, Auto Scaling names."""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING

from components.clouds.aws.efa import addresses_per_node, interface_layout

from ..backend import BackendDefaults, StackModels
from .names import ASG, NAMES

if TYPE_CHECKING:
    from ...catalog import InstanceType


class AwsBackend(BackendDefaults):
    name = "aws"
    scaling_group_name_max = NAMES.limit(ASG, "name")
    provider = "aws"
    region_key = "aws:region"
    capacities = frozenset({"on-demand", "spot", "mixed", "capacity-block", "reservation"})
    operations = frozenset({"monitoring", "idle", "budget_alerts", "shared_storage", "alarm_emails"})
    node_completes_hooks = True  # the node scripts complete the launch and terminate hooks (bootstrap/scripts)

    @staticmethod
    def stack_models() -> StackModels:
        from .checks import CHECKS
        from .stack_model import AwsClusterSpec, AwsImagesSpec

        return StackModels(AwsClusterSpec, AwsImagesSpec, CHECKS)

    def interfaces_in_use(self, instance: InstanceType, rdma: bool) -> int:
        return sum(slot.interface_type is not None for slot in interface_layout(instance, rdma))

    def addresses_per_node(self, instance: InstanceType, rdma: bool) -> int:
        return addresses_per_node(instance, rdma)

    def zone_pattern(self, region: str) -> str | None:
        # us-east-1a; a Local Zone is us-east-1-bos-1a.
        return rf"{re.escape(region)}[a-z]|{re.escape(region)}-[a-z]+-\d+[a-z]"

    def default_zone(self, region: str) -> str | None:
        # Zone names are the region code and a letter (us-west-2a); every region has an `a` zone.
        return f"{region}a"

    def zone_name_lookup(self, region: str, zone_id: str) -> str | None:
        # Spot is priced per AZ ID, the same zone in every account; network.zones takes zone names, which older
        # regions map to zones per account (docs.aws.amazon.com/global-infrastructure/latest/regions/az-ids.html).
        # EC2 DescribeAvailabilityZones takes ZoneIds and answers each zone's ZoneName (botocore's ec2 model).
        return shlex.join(["aws", "ec2", "describe-availability-zones", "--region", region, "--zone-ids", zone_id,
                           "--query", "AvailabilityZones[0].ZoneName", "--output", "text"])


BACKEND = AwsBackend()
