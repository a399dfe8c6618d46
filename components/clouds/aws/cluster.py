"""The AWS GPU cluster: network, key, identity, security group, interruption events, node groups."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from ...bootstrap import render_user_data
from ...bootstrap.for_group import group_bootstrap
from ...lock.status import image_tags
from ...resolve import ResolvedCluster
from ...tags import resource_tags
from .identity import AwsNodeIdentity, NodeIdentityArgs
from .interruptions import interruption_topic
from .key_policy import AUTOSCALING, EC2_FLEET, LogGroupGrant
from .lifecycle import group_hooks
from .network import AwsNetwork, AwsNetworkArgs
from .nodegroup import AwsNodeGroup, NodeGroupArgs
from .security import node_security_group
from .storage import cluster_key

LOG_RETENTION_DAYS = 30


class AwsGpuCluster(pulumi.ComponentResource):
    """A GPU cluster in one region from a validated ClusterSpec and a locked image profile."""

    group_names: dict[str, pulumi.Output[str]]
    """Per node group: the Auto Scaling group name, or the EC2 Fleet id."""
    placement_groups: dict[str, pulumi.Output[str]]
    """Per RDMA node group: its cluster placement group."""
    security_group_id: pulumi.Output[str]
    """The node security group."""
    role_arn: pulumi.Output[str] | None
    """The node role; None when the stack brings its instance profile."""
    instance_profile_arn: pulumi.Output[str]
    """The nodes' instance profile, created or brought."""
    key_arn: pulumi.Output[str]
    """The KMS key of volumes, logs and the interruption topic, created or brought."""
    subnet_ids: dict[str, pulumi.Output[str]]
    """Private subnet per zone."""
    vpc_id: pulumi.Output[str]
    """The VPC, created or brought."""
    interruption_topic_arn: pulumi.Output[str] | None
    """SNS topic of spot interruption and rebalance events; None without spot groups."""

    def __init__(
        self,
        resolved: ResolvedCluster,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        spec, lock = resolved.spec, resolved.lock
        name = spec.name
        super().__init__("gpufleet:aws:Cluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = resource_tags(spec.tags, spec.name, spec.environment)
        prod = spec.environment == "prod"
        image = lock.image_entry(spec.image, "aws", spec.region)  # the spec check made sure it exists

        network = AwsNetwork(
            f"{name}-net",
            AwsNetworkArgs(
                region=spec.region,
                zones=list(spec.network.zones),
                tags=tags,
                cidr=spec.network.cidr,
                vpc_id=spec.network.vpc_id,
                subnet_ids=list(spec.network.subnet_ids),
                nat_per_zone=prod,
            ),
            opts=child,
        )
        log_group_name = f"/gpufleet/{name}/{spec.environment}"
        spot = any(g.capacity in ("spot", "mixed") for g in spec.node_groups)
        if spec.storage.kms_key == "create":
            fleet = any(g.provisioner == "fleet" for g in spec.node_groups)
            key_arn: pulumi.Output[str] = cluster_key(
                name,
                LogGroupGrant(region=spec.region, name=log_group_name),
                [AUTOSCALING, EC2_FLEET] if fleet else [AUTOSCALING],
                create_roles=spec.identity.service_linked_roles == "create",
                events=spot,
                protect=prod,
                tags=tags,
                opts=child,
            ).arn
        else:
            key_arn = pulumi.Output.from_input(spec.storage.kms_key)
        log_group = aws.cloudwatch.LogGroup(
            f"{name}-logs",
            name=log_group_name,
            retention_in_days=LOG_RETENTION_DAYS,
            kms_key_id=key_arn,
            tags=tags,
            opts=child,
        )
        if spec.network.security_group_id:
            security_group_id = pulumi.Output.from_input(spec.network.security_group_id)
        else:
            admin = [str(c) for c in spec.network.admin_cidrs]
            security_group_id = node_security_group(name, network.vpc_id, admin, tags, child).id
        account = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id
        if spec.identity.instance_profile_arn:
            profile_arn: pulumi.Output[str] = pulumi.Output.from_input(spec.identity.instance_profile_arn)
            role_arn: pulumi.Output[str] | None = None
        else:
            identity = AwsNodeIdentity(
                f"{name}-node",
                NodeIdentityArgs(
                    account_id=account,
                    region=spec.region,
                    log_group_arn=log_group.arn,
                    group_names=[
                        g.names["scaling_group"] for g in resolved.groups if g.spec.provisioner == "autoscaling"
                    ],
                    s3_read_prefixes=list(spec.identity.s3_read_prefixes),
                    permissions_boundary=spec.identity.permissions_boundary,
                    tags=tags,
                ),
                opts=child,
            )
            profile_arn, role_arn = identity.instance_profile_arn, identity.role_arn
        if spot:
            topic_arn: pulumi.Output[str] | None = interruption_topic(name, key_arn, tags, child).arn
        else:
            topic_arn = None

        hooks = group_hooks(spec.bootstrap.checkpoint_grace_seconds)
        groups: dict[str, AwsNodeGroup] = {}
        for resolved_group in resolved.groups:
            group, types, rdma = resolved_group.spec, resolved_group.known_types, resolved_group.rdma
            subnets = [network.subnet_ids[zone] for zone in resolved_group.zones]
            bootstrap = group_bootstrap(
                resolved,
                resolved_group,
                checkpoint_grace_seconds=hooks.terminate.heartbeat_timeout,
                lifecycle=hooks.for_node(spec.region, resolved_group.names["scaling_group"])
                if group.provisioner == "autoscaling"
                else None,
            )
            groups[group.name] = AwsNodeGroup(
                f"{name}-{group.name}",
                NodeGroupArgs(
                    group=group,
                    types=types,
                    rdma=rdma,
                    asg_name=resolved_group.names["scaling_group"],
                    image_id=image.id,
                    image_tags=image_tags(spec.image, image),
                    subnet_ids=subnets,
                    security_group_id=security_group_id,
                    instance_profile_arn=profile_arn,
                    key_arn=key_arn,
                    root_volume_gb=spec.storage.root_volume_gb,
                    user_data=render_user_data(bootstrap),
                    hooks=hooks,
                    tags=tags,
                ),
                opts=child,
            )

        self.group_names = {n: g.group_name for n, g in groups.items()}
        self.placement_groups = {n: g.placement_group for n, g in groups.items() if g.placement_group}
        self.security_group_id = security_group_id
        self.role_arn = role_arn
        self.instance_profile_arn = profile_arn
        self.key_arn = key_arn
        self.subnet_ids = network.subnet_ids
        self.vpc_id = network.vpc_id
        self.interruption_topic_arn = topic_arn
        self.register_outputs(self.exports())

    def exports(self) -> dict[str, object]:
        """The stack outputs, by name: what callers and `pulumi stack output` read."""
        return {
            "group_names": self.group_names,
            "placement_groups": self.placement_groups,
            "security_group_id": self.security_group_id,
            "role_arn": self.role_arn,
            "instance_profile_arn": self.instance_profile_arn,
            "key_arn": self.key_arn,
            "subnet_ids": self.subnet_ids,
            "vpc_id": self.vpc_id,
            "interruption_topic_arn": self.interruption_topic_arn,
        }
