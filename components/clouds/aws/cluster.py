"""The AWS GPU cluster: network, key, identity, security group, interruption events, node groups."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from ...bootstrap import AwsLifecycle, BootstrapConfig, ExpectedType, render_user_data
from ...lock.status import image_tags
from ...spec import ClusterSpec, NodeGroup, uses_rdma
from ...spec.rules import Context, group_zones
from ...tags import resource_tags
from .identity import AwsNodeIdentity, NodeIdentityArgs
from .interruptions import interruption_topic
from .network import AwsNetwork, AwsNetworkArgs
from .nodegroup import AwsNodeGroup, NodeGroupArgs
from .security import node_security_group
from .storage import cluster_key

LOG_RETENTION_DAYS = 30


def asg_name(spec: ClusterSpec, group: NodeGroup) -> str:
    return f"gpufleet-{spec.name}-{spec.environment}-{group.name}"


class AwsGpuCluster(pulumi.ComponentResource):
    """A GPU cluster in one region from a validated ClusterSpec and a locked image profile."""

    def __init__(
        self,
        spec: ClusterSpec,
        ctx: Context,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        name = spec.name
        super().__init__("gpufleet:aws:Cluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = resource_tags(spec.tags, spec.name, spec.environment)
        prod = spec.environment == "prod"
        profile = ctx.lock.profiles[spec.image]
        image = ctx.lock.image_entry(spec.image, "aws", spec.region)  # the spec check made sure it exists

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
        if spec.storage.kms_key == "create":
            key_arn: pulumi.Output[str] = cluster_key(name, spec.region, prod, tags, child).arn
        else:
            key_arn = pulumi.Output.from_input(spec.storage.kms_key)
        log_group = aws.cloudwatch.LogGroup(
            f"{name}-logs",
            name=f"/gpufleet/{name}/{spec.environment}",
            retention_in_days=LOG_RETENTION_DAYS,
            kms_key_id=key_arn,
            tags=tags,
            opts=child,
        )
        security_group = node_security_group(
            name, network.vpc_id, [str(c) for c in spec.network.admin_cidrs], tags, child
        )
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
                    group_names=[asg_name(spec, g) for g in spec.node_groups if g.provisioner == "autoscaling"],
                    s3_read_prefixes=list(spec.identity.s3_read_prefixes),
                    permissions_boundary=spec.identity.permissions_boundary,
                    tags=tags,
                ),
                opts=child,
            )
            profile_arn, role_arn = identity.instance_profile_arn, identity.role_arn
        if any(g.capacity in ("spot", "mixed") for g in spec.node_groups):
            topic_arn: pulumi.Output[str] | None = interruption_topic(name, key_arn, tags, child).arn
        else:
            topic_arn = None

        groups: dict[str, AwsNodeGroup] = {}
        for group in spec.node_groups:
            types = [t for t in (ctx.catalog.get("aws", n) for n in group.instance_types) if t is not None]
            rdma = uses_rdma(group, ctx, "aws")
            subnets = [network.subnet_ids[zone] for zone in group_zones(spec, group, rdma)]
            bootstrap = BootstrapConfig(
                cloud="aws",
                cluster=spec.name,
                node_group=group.name,
                image_profile=spec.image,
                driver=profile.driver,
                cuda=profile.cuda,
                fabric_manager=profile.fabric_manager,
                expected={
                    t.name: ExpectedType(
                        gpu_model=t.gpu.model,
                        gpu_count=t.gpu.count,
                        nvswitch=t.nvswitch,
                        fabric=t.fabric.kind if rdma else "none",
                        fabric_interfaces=t.fabric.interfaces if rdma else 0,
                    )
                    for t in types
                },
                scratch=spec.storage.scratch,
                scratch_mount=spec.storage.scratch_mount,
                checkpoint_hook=spec.bootstrap.checkpoint_hook,
                aws_lifecycle=AwsLifecycle(
                    region=spec.region,
                    asg_name=asg_name(spec, group),
                    launch_hook="node-check",
                    terminate_hook="checkpoint",
                )
                if group.provisioner == "autoscaling"
                else None,
            )
            groups[group.name] = AwsNodeGroup(
                f"{name}-{group.name}",
                NodeGroupArgs(
                    group=group,
                    types=types,
                    rdma=rdma,
                    asg_name=asg_name(spec, group),
                    image_id=image.id,
                    image_tags=image_tags(spec.image, image),
                    subnet_ids=subnets,
                    security_group_id=security_group.id,
                    instance_profile_arn=profile_arn,
                    key_arn=key_arn,
                    root_volume_gb=spec.storage.root_volume_gb,
                    user_data=render_user_data(bootstrap),
                    checkpoint_grace_seconds=spec.bootstrap.checkpoint_grace_seconds,
                    tags=tags,
                ),
                opts=child,
            )

        self.outputs = {
            "group_names": {n: g.group_name for n, g in groups.items()},
            "placement_groups": {n: g.placement_group for n, g in groups.items() if g.placement_group},
            "security_group_id": security_group.id,
            "role_arn": role_arn,
            "instance_profile_arn": profile_arn,
            "key_arn": key_arn,
            "subnet_ids": network.subnet_ids,
            "vpc_id": network.vpc_id,
            "interruption_topic_arn": topic_arn,
        }
        self.register_outputs(self.outputs)
