"""One GPU node group: an ESS scaling group, launched from a scaling configuration (groups with ERIs) or a
launch template (the rest), or an Auto Provisioning Group (provisioner fleet).

The provider splits what a node needs: ess.ScalingConfiguration creates ERIs (network_interfaces with traffic
mode HighPerformance) but has no metadata-token setting and no deployment set; ecs.EcsLaunchTemplate has
http_tokens and deployment_set_id but its interfaces have no traffic mode (pulumi-alicloud 4.0.0). So groups
with ERIs use a scaling configuration and their bootstrap restricts the metadata service to root
(components/bootstrap, metadata_guard); every other group gets http_tokens required from its launch template.
Node count lives in the scaling group: a group of 512 nodes registers the same resources as one of 2.
A scaling group's scale-out hook notifies the cluster's scale-out gate (scale_out_gate.py), which admits a new
node only when the node check passes on it, and its scale-in hook the checkpoint runbook, which runs the stack's
checkpoint on a leaving node before ESS releases it; an auto provisioning group has no lifecycle hooks, so its nodes
are not gated (a failed check only keeps the workload units from starting).

No node launches before both hooks and the roles' grants exist (`start`, called once the cluster has attached
them). terraform-provider-alicloud alicloud/resource_alicloud_ess_scaling_group.go, Create: a group is created
Inactive (line 310) and enabled there only when it has a launch template (lines 314-335); a scaling configuration
with enable set enables its group (resource_alicloud_ess_scaling_configuration.go, enableEssScalingConfiguration,
line 1523-1562). So a configuration group's configuration waits for the hooks, and a launch-template group is
created with min size and desired capacity 0 and sized afterwards (group_size.py).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_alicloud as alicloud

from gpufleet.catalog import InstanceType
from gpufleet.clouds.alicloud.names import CONFIGURATION, NAMES
from gpufleet.clouds.naming import fit
from gpufleet.lock.status import PROFILE_TAG
from gpufleet.stackfile.models import NodeGroup

from ...bootstrap.added_files import gzip_user_data
from ..hooks import GroupHooks
from .eri import HIGH_PERFORMANCE, STANDARD, eri_count, eri_security_groups
from .group_size import ScalingGroupSize

DISK_CATEGORY = "cloud_essd"
SPOT_POOLS = 3  # COST_OPTIMIZED spreads spot over this many of the cheapest types (ESS allows 1 to 10)
METADATA_GUARD_TAG = "gpufleet:metadata-guard"


@dataclass(frozen=True)
class NodeGroupArgs:
    group: NodeGroup
    types: list[InstanceType]
    rdma: bool
    group_name: str
    image_id: str | None
    image_tags: dict[str, str]
    vswitch_ids: list[pulumi.Input[str]]
    security_group_id: pulumi.Input[str]
    role_name: pulumi.Input[str]
    key_id: pulumi.Input[str]
    root_volume_gb: int
    user_data: pulumi.Input[str]
    """The rendered cloud-init document (an Output where it names the metrics' application group)."""
    hooks: GroupHooks
    tags: dict[str, str]
    region: str
    deployment_set_id: pulumi.Input[str] | None = None
    launch_notification_arn: pulumi.Input[str] | None = None
    """The scale-out gate the launch hook notifies (scaling groups only)."""
    terminate_notification_arn: pulumi.Input[str] | None = None
    """The checkpoint runbook the scale-in hook notifies (scaling groups only)."""
    eri_lane_security_group_ids: tuple[pulumi.Input[str], ...] = ()
    """Lane groups 2..n of the ERIs (security.py eri_lane_security_groups), at least one fewer than the ERIs."""
    gzipped_user_data: bool = False
    """Send the user data gzipped (cloud-init unpacks it; the launch template and scaling configuration pass a
    base64 value as it is, resource_alicloud_ess_scaling_configuration.go lines 780-787): a Slurm node's join does
    not fit Alibaba's 16 KB otherwise (slurm_head.py)."""


def spot_strategy(group: NodeGroup) -> str:
    if not group.spot:
        return "NoSpot"
    return "SpotWithPriceLimit" if group.spot_max_price else "SpotAsPriceGo"


class AlicloudNodeGroup(pulumi.ComponentResource):
    group_id: pulumi.Output[str]
    eris: int

    def __init__(self, name: str, args: NodeGroupArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:alicloud:NodeGroup", name, None, opts)
        self._name, self._args = name, args
        self.eris = eri_count(args.types[0], args.rdma)
        if args.group.provisioner == "fleet":
            self.group_id = self._fleet(self._launch_template()).id
        else:
            self._group = self._scaling_group(None if self.eris else self._launch_template())
            self._hooks = [
                alicloud.ess.LifecycleHook(
                    f"{name}-hook-{hook.name}",
                    name=hook.name,
                    scaling_group_id=self._group.id,
                    lifecycle_transition=hook.transition,
                    heartbeat_timeout=hook.heartbeat_timeout,
                    default_result=hook.default_result,
                    notification_arn=(args.launch_notification_arn if hook is args.hooks.launch
                                      else args.terminate_notification_arn),
                    opts=pulumi.ResourceOptions(parent=self),
                )
                for hook in (args.hooks.launch, args.hooks.terminate)
            ]
            self.group_id = self._group.id
        self.register_outputs({"group_id": self.group_id})

    def start(self, grants: Sequence[pulumi.Resource]) -> None:
        """Let a scaling group launch nodes once both hooks and the grants (the node's and the gate's role
        policies) exist: enable a configuration group, size a launch-template group. A fleet has no hooks."""
        if self._args.group.provisioner == "fleet":
            return
        opts = pulumi.ResourceOptions(parent=self, depends_on=[*self._hooks, *grants])
        if self.eris:
            self._scaling_configuration(self._group, opts)
        else:
            size = self._args.group.size
            ScalingGroupSize(f"{self._name}-size", {"scaling_group_id": self._group.id, "min_size": size.min,
                                                    "desired_capacity": size.desired, "region": self._args.region},
                             opts)

    def _user_data(self) -> pulumi.Output[str]:
        args = self._args
        user_data = pulumi.Output.from_input(args.user_data)
        if args.gzipped_user_data:
            return user_data.apply(lambda text: base64.b64encode(gzip_user_data(
                text, "alicloud", f"node group {args.group.name}", "use fewer instance types or zones")).decode())
        return user_data.apply(lambda text: base64.b64encode(text.encode()).decode())

    def _description(self) -> str:
        args = self._args
        unbaked = "" if args.image_id else f"; image profile {args.image_tags.get(PROFILE_TAG)} UNBAKED: no image yet"
        return f"{args.group.name}: {args.types[0].name}, {self.eris} ERI(s){unbaked}"

    def _launch_template(self) -> alicloud.ecs.EcsLaunchTemplate:
        args, group = self._args, self._args.group
        return alicloud.ecs.EcsLaunchTemplate(
            f"{self._name}-lt",
            # Unique in the region: the group's name carries the environment.
            launch_template_name=f"{args.group_name}-lt",
            description=self._description(),
            image_id=args.image_id,
            instance_type=args.types[0].name,
            security_group_ids=[args.security_group_id],
            vswitch_id=args.vswitch_ids[0],
            network_type="vpc",
            internet_max_bandwidth_out=0,
            ram_role_name=args.role_name,
            http_endpoint="enabled",
            http_tokens="required",
            http_put_response_hop_limit=2,  # containers on the node reach the metadata service with a token
            system_disk=alicloud.ecs.EcsLaunchTemplateSystemDiskArgs(
                category=DISK_CATEGORY, size=args.root_volume_gb, encrypted=True, kms_key_id=args.key_id,
                delete_with_instance=True,
            ),
            deployment_set_id=args.deployment_set_id,
            spot_strategy=spot_strategy(group),
            spot_price_limit=group.spot_max_price,
            user_data=self._user_data(),
            update_default_version_number=True,
            tags={**args.tags, **args.image_tags},
            template_tags={**args.tags, **args.image_tags},
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _scaling_group(self, template: alicloud.ecs.EcsLaunchTemplate | None) -> alicloud.ess.ScalingGroup:
        args, group = self._args, self._args.group
        spot = group.spot
        # Created enabled with a launch template: no nodes until the hooks exist (`start` sizes it then).
        return alicloud.ess.ScalingGroup(
            f"{self._name}-asg",
            scaling_group_name=args.group_name,
            min_size=0 if template else group.size.min,
            max_size=group.size.max,
            desired_capacity=0 if template else group.size.desired,
            vswitch_ids=args.vswitch_ids,
            # COST_OPTIMIZED is the only policy under which ESS honours the on-demand base and spot settings.
            multi_az_policy="COST_OPTIMIZED" if spot else "PRIORITY",
            on_demand_base_capacity=group.on_demand_base if spot else None,
            on_demand_percentage_above_base_capacity=0 if spot else None,
            spot_instance_pools=SPOT_POOLS if spot else None,
            spot_instance_remedy=True if spot else None,
            launch_template_id=template.id if template else None,
            launch_template_version="Default" if template else None,
            launch_template_overrides=[
                alicloud.ess.ScalingGroupLaunchTemplateOverrideArgs(
                    instance_type=inst.name, spot_price_limit=group.spot_max_price if spot else None
                )
                for inst in args.types
            ] if template else None,
            removal_policies=["NewestInstance", "OldestScalingConfiguration"],
            health_check_type="ECS",
            tags=args.tags,
            # The autoscaler owns desired capacity once the group exists; a launch-template group's min size is
            # the sizing execution's.
            opts=pulumi.ResourceOptions(
                parent=self, ignore_changes=["desiredCapacity", "minSize"] if template else ["desiredCapacity"]
            ),
        )

    def _scaling_configuration(
        self, group: alicloud.ess.ScalingGroup, opts: pulumi.ResourceOptions
    ) -> alicloud.ess.ScalingConfiguration:
        args, spec = self._args, self._args.group
        # Each ERI block distinct in a field the provider's set hashes (eri.py, eri_security_groups).
        interfaces = [alicloud.ess.ScalingConfigurationNetworkInterfaceArgs(
            instance_type="Primary", network_interface_traffic_mode=STANDARD,
            security_group_ids=[args.security_group_id],
        )] + [
            alicloud.ess.ScalingConfigurationNetworkInterfaceArgs(
                instance_type="Secondary", network_interface_traffic_mode=HIGH_PERFORMANCE,
                security_group_ids=groups,
            )
            for groups in eri_security_groups(args.security_group_id, args.eri_lane_security_group_ids, self.eris)
        ]
        spot = spot_strategy(spec)
        return alicloud.ess.ScalingConfiguration(
            f"{self._name}-config",
            scaling_configuration_name=fit(
                f"{self._name}-config", NAMES.limit(CONFIGURATION, "scalingConfigurationName")
            ),
            scaling_group_id=group.id,
            instance_types=[t.name for t in args.types],
            image_id=args.image_id,
            instance_description=self._description(),
            # The only combination the provider creates; unconfirmed against ESS (eri.primary_eni_both_ways).
            security_group_ids=[args.security_group_id],
            network_interfaces=interfaces,
            internet_max_bandwidth_out=0,
            role_name=args.role_name,
            http_endpoint="enabled",
            system_disk_category=DISK_CATEGORY,
            system_disk_size=args.root_volume_gb,
            system_disk_encrypted=True,
            system_disk_kms_key_id=args.key_id,
            spot_strategy=spot,
            spot_price_limits=[
                alicloud.ess.ScalingConfigurationSpotPriceLimitArgs(
                    instance_type=t.name, price_limit=spec.spot_max_price
                )
                for t in args.types
            ] if spot == "SpotWithPriceLimit" else None,
            user_data=self._user_data(),
            # enable activates the group: a scaling group with no active configuration launches nothing.
            active=True,
            enable=True,
            force_delete=True,
            tags={**args.tags, **args.image_tags, METADATA_GUARD_TAG: "root-only"},
            opts=opts,
        )

    def _fleet(self, template: alicloud.ecs.EcsLaunchTemplate) -> alicloud.ecs.AutoProvisioningGroup:
        args, group = self._args, self._args.group
        spot = group.spot
        desired = group.size.desired
        on_demand = min(group.on_demand_base if spot else desired, desired)
        return alicloud.ecs.AutoProvisioningGroup(
            f"{self._name}-fleet",
            auto_provisioning_group_name=args.group_name,
            auto_provisioning_group_type="maintain",
            launch_template_id=template.id,
            total_target_capacity=str(desired),
            pay_as_you_go_target_capacity=str(on_demand),
            spot_target_capacity=str(desired - on_demand),
            default_target_capacity_type="Spot" if spot else "PayAsYouGo",
            pay_as_you_go_allocation_strategy="prioritized",
            spot_allocation_strategy="lowest-price",
            spot_instance_interruption_behavior="terminate",
            excess_capacity_termination_policy="termination",
            terminate_instances=True,
            launch_template_configs=[
                alicloud.ecs.AutoProvisioningGroupLaunchTemplateConfigArgs(
                    instance_type=inst.name, vswitch_id=vswitch, max_price=f"{group.spot_max_price:.3f}",
                    weighted_capacity="1", priority=str(priority),
                )
                for priority, inst in enumerate(args.types)
                for vswitch in args.vswitch_ids
            ],
            opts=pulumi.ResourceOptions(parent=self),
        )
