"""One GPU node group: placement group, launch templates per interface layout, and its Auto Scaling
group (mixed instances, lifecycle hooks, instance refresh) or EC2 Fleet.

Node count lives in the scaling group: a group of 512 nodes registers the same resources as one of 2.
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from gpufleet.catalog import InstanceType
from gpufleet.lock.status import PROFILE_TAG

from ..hooks import Hook
from .efa import InterfaceSlot, interface_layout
from .eks_nodes import group_tags, instance_tags, launch_user_data, metadata_hop_limit
from .nodegroup_args import NodeGroupArgs

ROOT_DEVICE = "/dev/sda1"  # Ubuntu AMIs (the lock's images) boot from /dev/sda1
SPOT_ALLOCATION = "price-capacity-optimized"  # AWS's recommendation; `lowest-price` risks interruptions
ON_DEMAND_ALLOCATION = "prioritized"  # follow instance_types order: primary first
# EC2 Fleet honours override priorities only under these strategies (lower number first).
FLEET_ON_DEMAND_ALLOCATION = "prioritized"
FLEET_SPOT_ALLOCATION = "capacity-optimized-prioritized"
RESERVED = ("capacity-block", "reservation")  # capacity kinds that launch into a reservation
# EC2 Fleet's TerminationDelay bounds (botocore ec2 FleetSpotCapacityRebalanceRequest: 120 to 7200 seconds).
FLEET_TERMINATION_DELAY_MIN = 120


def _interface_args(
    slots: list[InterfaceSlot], sg_id: pulumi.Input[str]
) -> list[aws.ec2.LaunchTemplateNetworkInterfaceArgs]:
    return [
        aws.ec2.LaunchTemplateNetworkInterfaceArgs(
            network_card_index=slot.network_card_index,
            device_index=slot.device_index,
            interface_type=slot.interface_type,
            security_groups=[sg_id],
            # Only a single-interface launch may carry this: EC2 refuses it on a secondary interface and, on
            # the primary, whenever the launch has several ("The associatePublicIPAddress parameter cannot be
            # specified when launching with multiple network interfaces": terraform-provider-aws
            # internal/service/ec2/ec2_fleet_test.go, multipleNetworkInterfaces). The subnets map no public IP.
            associate_public_ip_address="false" if slot.primary and len(slots) == 1 else None,
            delete_on_termination="true",
        )
        for slot in slots
    ]


def fleet_termination_delay(checkpoint_grace_seconds: int) -> int:
    """Seconds a rebalanced fleet node lives beside its replacement: the checkpoint grace, at least EC2's minimum."""
    return max(FLEET_TERMINATION_DELAY_MIN, checkpoint_grace_seconds)


def _initial_hook(hook: Hook) -> aws.autoscaling.GroupInitialLifecycleHookArgs:
    return aws.autoscaling.GroupInitialLifecycleHookArgs(
        name=hook.name,
        lifecycle_transition=hook.transition,
        heartbeat_timeout=hook.heartbeat_timeout,
        default_result=hook.default_result,
    )


def _instance_refresh(mode: str) -> aws.autoscaling.GroupInstanceRefreshArgs | None:
    """Rolling replacement on `instance_refresh: rolling`. pulumi_aws 7.51 (autoscaling/group.py, _inputs.py
    triggers): "If this block is configured, start an Instance Refresh when this Auto Scaling group is updated",
    always on a launch template change; without it running nodes, and the jobs on them, stay until replaced by choice
    (instance_refresh: none)."""
    if mode != "rolling":
        return None
    return aws.autoscaling.GroupInstanceRefreshArgs(
        strategy="Rolling",
        preferences=aws.autoscaling.GroupInstanceRefreshPreferencesArgs(min_healthy_percentage=90),
    )


class AwsNodeGroup(pulumi.ComponentResource):
    """One node group: its placement group, launch templates and Auto Scaling group or EC2 Fleet."""

    group_name: pulumi.Output[str]
    placement_group: pulumi.Output[str] | None

    def __init__(self, name: str, args: NodeGroupArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:NodeGroup", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        group = args.group
        placement = None
        # A Capacity Block or reservation is placed already: a placement group of ours beside it constrains the
        # launch to capacity outside it, which fails with InsufficientInstanceCapacity while the reservation has
        # room (aws-parallelcluster cli/src/pcluster/validators/ec2_validators.py, PlacementGroupCapacityType
        # Validator; eksctl #7949). So none there.
        if args.rdma and group.capacity not in RESERVED:
            placement = aws.ec2.PlacementGroup(f"{name}-pg", strategy="cluster", tags=args.tags, opts=child)
        self.placement_group = placement.name if placement else None
        if args.eks is not None and group.provisioner == "fleet":
            raise pulumi.RunError(f"node_groups[{group.name}].provisioner: fleet cannot join an EKS cluster (Cluster "
                                  "Autoscaler resizes Auto Scaling groups); use autoscaling")
        self._user_data = launch_user_data(args, self.placement_group, f"{name}-pg" if placement else None)

        # One launch template per distinct interface layout: a fallback with another card count
        # never inherits the primary's layout.
        layouts: dict[tuple[InterfaceSlot, ...], aws.ec2.LaunchTemplate] = {}
        type_templates: list[tuple[InstanceType, aws.ec2.LaunchTemplate]] = []
        for inst in args.types:
            layout = tuple(interface_layout(inst, args.rdma))
            if layout not in layouts:
                suffix = "lt" if not layouts else f"lt-{inst.name.replace('.', '-')}"
                layouts[layout] = self._launch_template(f"{name}-{suffix}", inst, list(layout), placement, args)
            type_templates.append((inst, layouts[layout]))
        primary_template = type_templates[0][1]

        if group.provisioner == "fleet":
            fleet = self._fleet(name, args, type_templates)
            self.group_name = fleet.id
        else:
            asg = self._autoscaling_group(name, args, type_templates, primary_template)
            self.group_name = asg.name
        self.register_outputs({"group_name": self.group_name, "placement_group": self.placement_group})

    def _launch_template(
        self,
        name: str,
        inst: InstanceType,
        layout: list[InterfaceSlot],
        placement: aws.ec2.PlacementGroup | None,
        args: NodeGroupArgs,
    ) -> aws.ec2.LaunchTemplate:
        group = args.group
        market = None
        reservation = None
        if group.capacity == "capacity-block":
            market = aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type="capacity-block")
        if group.capacity in RESERVED:
            reservation = aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
                capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                    capacity_reservation_id=group.reservation_id
                )
            )
        return aws.ec2.LaunchTemplate(
            name,
            description=f"{group.name}: {inst.name}, {len(layout)} network interface(s)"
            + ("" if args.image_id else f"; image profile {args.image_tags.get(PROFILE_TAG)} UNBAKED: no AMI yet"),
            image_id=args.image_id,
            instance_type=inst.name,
            iam_instance_profile=aws.ec2.LaunchTemplateIamInstanceProfileArgs(arn=args.instance_profile_arn),
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
                http_endpoint="enabled",
                http_tokens="required",
                http_put_response_hop_limit=metadata_hop_limit(args),
            ),
            block_device_mappings=[
                aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                    device_name=ROOT_DEVICE,
                    ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                        volume_size=args.root_volume_gb,
                        volume_type="gp3",
                        encrypted="true",
                        kms_key_id=args.key_arn,
                        delete_on_termination="true",
                    ),
                )
            ],
            network_interfaces=_interface_args(layout, args.security_group_id),
            placement=aws.ec2.LaunchTemplatePlacementArgs(group_name=placement.name) if placement else None,
            instance_market_options=market,
            capacity_reservation_specification=reservation,
            user_data=self._user_data,
            update_default_version=True,
            tag_specifications=[
                aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=instance_tags(args, kind))
                for kind in ("instance", "volume", "network-interface")
            ],
            tags={**args.tags, **args.image_tags},
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _overrides(
        self, type_templates: list[tuple[InstanceType, aws.ec2.LaunchTemplate]], primary: aws.ec2.LaunchTemplate
    ) -> list[aws.autoscaling.GroupMixedInstancesPolicyLaunchTemplateOverrideArgs]:
        return [
            aws.autoscaling.GroupMixedInstancesPolicyLaunchTemplateOverrideArgs(
                instance_type=inst.name,
                launch_template_specification=None
                if template is primary
                else aws.autoscaling.GroupMixedInstancesPolicyLaunchTemplateOverrideLaunchTemplateSpecificationArgs(
                    launch_template_id=template.id, version=template.latest_version.apply(str)
                ),
            )
            for inst, template in type_templates
        ]

    def _mixed_instances(
        self,
        args: NodeGroupArgs,
        spot: bool,
        type_templates: list[tuple[InstanceType, aws.ec2.LaunchTemplate]],
        primary: aws.ec2.LaunchTemplate,
    ) -> aws.autoscaling.GroupMixedInstancesPolicyArgs:
        """On-demand base and spot above it over the primary template, with an override per type."""
        group = args.group
        return aws.autoscaling.GroupMixedInstancesPolicyArgs(
            instances_distribution=aws.autoscaling.GroupMixedInstancesPolicyInstancesDistributionArgs(
                on_demand_allocation_strategy=ON_DEMAND_ALLOCATION,
                on_demand_base_capacity=group.on_demand_base if spot else 0,
                on_demand_percentage_above_base_capacity=0 if spot else 100,
                spot_allocation_strategy=SPOT_ALLOCATION,
                # "" caps spot at the on-demand price.
                spot_max_price=f"{group.spot_max_price:.4f}" if group.spot_max_price else "",
            ),
            launch_template=aws.autoscaling.GroupMixedInstancesPolicyLaunchTemplateArgs(
                launch_template_specification=aws.autoscaling.GroupMixedInstancesPolicyLaunchTemplateLaunchTemplateSpecificationArgs(
                    launch_template_id=primary.id,
                    # The explicit version, never $Latest: instance refresh only fires on a version change.
                    version=primary.latest_version.apply(str),
                ),
                overrides=self._overrides(type_templates, primary),
            ),
        )

    def _autoscaling_group(
        self,
        name: str,
        args: NodeGroupArgs,
        type_templates: list[tuple[InstanceType, aws.ec2.LaunchTemplate]],
        primary: aws.ec2.LaunchTemplate,
    ) -> aws.autoscaling.Group:
        group = args.group
        spot = group.spot
        mixed = None
        launch_template = None
        if group.capacity in RESERVED:
            # A reservation is for one type: the launch template targets it directly.
            launch_template = aws.autoscaling.GroupLaunchTemplateArgs(
                id=primary.id, version=primary.latest_version.apply(str)
            )
        else:
            mixed = self._mixed_instances(args, spot, type_templates, primary)
        hooks = [args.hooks.launch, args.hooks.terminate]
        asg = aws.autoscaling.Group(
            f"{name}-asg",
            name=args.asg_name,
            min_size=group.size.min,
            max_size=group.size.max,
            desired_capacity=group.size.desired,
            vpc_zone_identifiers=args.subnet_ids,
            service_linked_role_arn=args.service_linked_role_arn,
            mixed_instances_policy=mixed,
            launch_template=launch_template,
            capacity_rebalance=spot,
            health_check_type="EC2",
            health_check_grace_period=args.hooks.launch.heartbeat_timeout,
            # Pulumi must not wait for GPU capacity to appear; the launch hook gates nodes instead.
            wait_for_capacity_timeout="0",
            # The hooks must hold the very first instances too, which launch while the group is
            # created and before a separate hook resource could exist: so the group is created with
            # them, and the LifecycleHook resources below own them afterwards (AWS applies initial
            # hooks only at creation, hence ignore_changes).
            initial_lifecycle_hooks=[_initial_hook(hook) for hook in hooks],
            instance_refresh=_instance_refresh(group.instance_refresh),
            tags=[aws.autoscaling.GroupTagArgs(key=key, value=value, propagate_at_launch=False)
                  for key, value in group_tags(args, self.placement_group)],
            # The autoscaler owns desired capacity once the group exists.
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["desiredCapacity", "initialLifecycleHooks"]),
        )
        for hook in hooks:
            self._lifecycle_hook(name, asg, hook)
        return asg

    def _lifecycle_hook(self, name: str, asg: aws.autoscaling.Group, hook: Hook) -> aws.autoscaling.LifecycleHook:
        """The live hook: a changed timeout reaches the existing group (PutLifecycleHook updates in place)."""
        return aws.autoscaling.LifecycleHook(
            f"{name}-hook-{hook.name}",
            name=hook.name,
            autoscaling_group_name=asg.name,
            lifecycle_transition=hook.transition,
            heartbeat_timeout=hook.heartbeat_timeout,
            default_result=hook.default_result,
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _fleet(
        self, name: str, args: NodeGroupArgs, type_templates: list[tuple[InstanceType, aws.ec2.LaunchTemplate]]
    ) -> aws.ec2.Fleet:
        group = args.group
        spot = group.spot
        # Priority follows instance_types: the primary 0, each fallback after it.
        by_template: dict[int, tuple[aws.ec2.LaunchTemplate, list[tuple[int, InstanceType]]]] = {}
        for priority, (inst, template) in enumerate(type_templates):
            by_template.setdefault(id(template), (template, []))[1].append((priority, inst))
        # Per override, in USD per instance-hour; unset caps spot at the on-demand price.
        max_price = f"{group.spot_max_price:.4f}" if spot and group.spot_max_price else None
        configs = [
            aws.ec2.FleetLaunchTemplateConfigArgs(
                launch_template_specification=aws.ec2.FleetLaunchTemplateConfigLaunchTemplateSpecificationArgs(
                    launch_template_id=template.id, version=template.latest_version.apply(str)
                ),
                overrides=[
                    aws.ec2.FleetLaunchTemplateConfigOverrideArgs(
                        instance_type=inst.name, subnet_id=subnet, priority=priority, max_price=max_price
                    )
                    for priority, inst in types
                    for subnet in args.subnet_ids
                ],
            )
            for template, types in by_template.values()
        ]
        on_demand = group.on_demand_base if spot else group.size.desired
        return aws.ec2.Fleet(
            f"{name}-fleet",
            type="maintain",
            launch_template_configs=configs,
            target_capacity_specification=aws.ec2.FleetTargetCapacitySpecificationArgs(
                default_target_capacity_type="spot" if spot else "on-demand",
                total_target_capacity=group.size.desired,
                on_demand_target_capacity=min(on_demand, group.size.desired),
                spot_target_capacity=group.size.desired - min(on_demand, group.size.desired),
            ),
            spot_options=aws.ec2.FleetSpotOptionsArgs(
                allocation_strategy=FLEET_SPOT_ALLOCATION,
                instance_interruption_behavior="terminate",
                maintenance_strategies=aws.ec2.FleetSpotOptionsMaintenanceStrategiesArgs(
                    # `launch` never terminates the warned node, so both bill until someone does;
                    # launch-before-terminate ends it after termination_delay, which covers the checkpoint
                    # grace (botocore ec2 FleetReplacementStrategy; the provider's ec2_fleet.go validates
                    # termination_delay IntBetween(120, 7200) and sends it only with this strategy).
                    capacity_rebalance=aws.ec2.FleetSpotOptionsMaintenanceStrategiesCapacityRebalanceArgs(
                        replacement_strategy="launch-before-terminate",
                        termination_delay=fleet_termination_delay(args.hooks.terminate.heartbeat_timeout),
                    )
                ),
            ),
            on_demand_options=aws.ec2.FleetOnDemandOptionsArgs(allocation_strategy=FLEET_ON_DEMAND_ALLOCATION),
            replace_unhealthy_instances=True,
            terminate_instances=True,
            terminate_instances_with_expiration=True,
            excess_capacity_termination_policy="termination",
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self),
        )
