"""The EKS system group (scheduler.system_group): an EKS managed node group of small on-demand CPU nodes with no
taint, where CoreDNS, the operators, Cluster Autoscaler and job launchers run, so the first deploy never waits on GPU
capacity and the GPU groups may start at 0.

Why a managed node group: EKS builds and patches its AMI for the cluster's minor (AL2023, amiType
AL2023_x86_64_STANDARD), at the release the stack pins (releaseVersion, read from EKS's public SSM parameter by
`gpufleet lock resolve`), and gives the role its access entry itself; none of gpufleet's GPU bootstrap runs there.
Its own role, not the GPU nodes': the system nodes need only what EKS documents for a node role (EKS user guide
security/iam-reference/create-node-role.adoc@4d52b4d: AmazonEKSWorkerNodePolicy and
AmazonEC2ContainerRegistryPullOnly; the VPC CNI has its own Pod Identity role here), not the GPU role's lifecycle
actions, health marks, S3 prefixes and log group. EKS creates the access entry of a managed node group's role itself
in API authentication mode (terraform-aws-eks docs, access entries: "EKS automatically creates access entries for the
IAM roles used by EKS managed node groups"). The group's Auto Scaling group runs under the account's default Auto
Scaling service-linked role, which the stack key admits (key_policy.EKS_MANAGED_NODES). A launch template encrypts
the root volume with the stack key, requires IMDSv2, keeps pods off the node role (hop limit 1) and puts the nodes in
the node security group the control plane shares.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from gpufleet.stackfile.scheduler import SYSTEM_NODE_LABELS

WORKER_POLICIES = {
    "worker": "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    "ecr": "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
}
AMI_TYPE = "AL2023_x86_64_STANDARD"
# AL2023's root device (the EKS AL2023 AMIs boot from /dev/xvda).
ROOT_DEVICE = "/dev/xvda"
ROOT_GB = 50
TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}],
}


@dataclass(frozen=True)
class SystemGroupArgs:
    """Inputs of system_node_group."""

    cluster_name: pulumi.Input[str]
    version: str
    instance_type: str
    min_size: int
    max_size: int
    subnet_ids: list[pulumi.Input[str]]
    security_group_id: pulumi.Input[str]
    key_arn: pulumi.Input[str]
    release_version: str | None = None
    """The AMI release the nodes run (images/lock.resolved.yaml, read by `gpufleet lock resolve`); None while unread:
    the plan names the fact and a real run refuses (eks_steps.refuse_unpinned_kubernetes)."""
    permissions_boundary: str | None = None
    tags: dict[str, str] = field(default_factory=dict)


def system_node_group(name: str, args: SystemGroupArgs, opts: pulumi.ResourceOptions) -> aws.eks.NodeGroup:
    """The role, the launch template and the managed node group; the group waits for the role's policies."""
    role = aws.iam.Role(f"{name}-system-role", description=f"gpufleet {name}: EKS system nodes",
                        assume_role_policy=json.dumps(TRUST), permissions_boundary=args.permissions_boundary,
                        tags=args.tags, opts=opts)
    attachments = [aws.iam.RolePolicyAttachment(f"{name}-system-{short}", role=role.name, policy_arn=arn, opts=opts)
                   for short, arn in WORKER_POLICIES.items()]
    template = aws.ec2.LaunchTemplate(
        f"{name}-system",
        description=f"{name}: EKS system nodes",
        update_default_version=True,
        vpc_security_group_ids=[args.security_group_id],
        metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
            http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=1),
        block_device_mappings=[aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
            device_name=ROOT_DEVICE,
            ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                volume_size=ROOT_GB, volume_type="gp3", encrypted="true", kms_key_id=args.key_arn,
                delete_on_termination="true"),
        )],
        tag_specifications=[aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=args.tags)
                            for kind in ("instance", "volume")],
        tags=args.tags,
        opts=opts,
    )
    return aws.eks.NodeGroup(
        f"{name}-system",
        cluster_name=args.cluster_name,
        version=args.version,
        # Pinned: without it EKS takes the newest release when the group is made, and the next `up` diffs nothing
        # while a re-created group would boot another one.
        release_version=args.release_version,
        node_role_arn=role.arn,
        subnet_ids=args.subnet_ids,
        ami_type=AMI_TYPE,
        capacity_type="ON_DEMAND",
        instance_types=[args.instance_type],
        scaling_config=aws.eks.NodeGroupScalingConfigArgs(
            min_size=args.min_size, desired_size=args.min_size, max_size=args.max_size),
        labels=dict(SYSTEM_NODE_LABELS),
        launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
            id=template.id, version=template.latest_version.apply(str)),
        tags=args.tags,
        # Cluster Autoscaler owns the desired size once the group runs (components/kubernetes/autoscaler.py).
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
            depends_on=attachments, ignore_changes=["scalingConfig.desiredSize"])),
    )


def scaling_group_name(group: aws.eks.NodeGroup) -> pulumi.Output[str]:
    """The Auto Scaling group EKS made for the managed node group (its name is EKS's choice)."""
    return group.resources.apply(lambda found: found[0].autoscaling_groups[0].name)
