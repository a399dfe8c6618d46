"""scheduler slurm on AWS: the head node slurmctld runs on, its security group, the munge key's secret, and what
the node groups add to join it.

- The head node: an on-demand instance of the cluster's baked image (Slurm, munge, pyxis, enroot) in a private subnet,
  no public address, IMDSv2 only, its root disk on the stack key, reached by SSM Session Manager (no key pair). Its
  user data (gzipped cloud-config) carries components.slurm.head_files' files and AWS's part of the scripts.
- Its security group has no inline rules: it admits slurmctld and srun's ports from the nodes' group, reaches the
  nodes' slurmd, and HTTPS out (Secrets Manager, Auto Scaling and SSM through the NAT). The nodes' group, made after
  it, names it inline (security.py), so neither group waits on the other.
- The munge key's secret is encrypted with the stack key and has no version here: the head node makes the key at its
  first boot and puts it (scripts/slurm-head.sh), so the key never is in Pulumi state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pulumi
import pulumi_aws as aws

from components.bootstrap.added_files import cloud_config_with
from components.slurm.head_files import cloud_head_config, head_site, packed_head_user_data
from components.slurm.node_files import JOIN_UNIT, node_join_files
from components.slurm.power_units import refuse_elastic_without_power_program
from components.slurm.site import SLURMCTLD_PORT, SLURMD_PORT, SRUN_PORTS
from gpufleet.clouds.naming import stack_base
from gpufleet.stackfile.slurm import HeadNode
from gpufleet.stackfile.slurm_checks import head_node_type

from .cluster_parts import SlurmHead
from .security import OPEN_V4
from .slurm_identity import head_identity

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster, ResolvedGroup

    from ..scope import ClusterScope

ROLE_TAG = {"gpufleet:role": "slurm-head"}
# The head node runs no containers: the metadata answers reach the instance itself only.
HEAD_METADATA_HOP_LIMIT = 1


def slurm_base(scope: ClusterScope) -> str:
    """`<cluster>-<environment>-slurm-head`: the head node's name and its resources' prefix."""
    return f"{stack_base(scope.spec.name, scope.spec.environment)}-slurm-head"


def head_security_group(scope: ClusterScope, vpc_id: pulumi.Input[str]) -> aws.ec2.SecurityGroup:
    """The head node's group, without inline rules (its rules are head_access's resources)."""
    name = slurm_base(scope)
    return aws.ec2.SecurityGroup(name, description="Slurm head node: slurmctld and srun from the GPU nodes only",
                                 vpc_id=vpc_id, tags={**scope.tags, "Name": name}, opts=scope.child)


def head_access(scope: ClusterScope, head_sg_id: pulumi.Input[str], node_sg_id: pulumi.Input[str]) -> None:
    """The head node group's rules: slurmctld and srun's ports from the nodes, slurmd on the nodes, HTTPS out."""
    name = slurm_base(scope)
    for suffix, (port_low, port_high), what in (("slurmctld", (SLURMCTLD_PORT, SLURMCTLD_PORT), "slurmctld"),
                                               ("srun", SRUN_PORTS, "srun's ports")):
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-in-{suffix}", security_group_id=head_sg_id, referenced_security_group_id=node_sg_id,
            ip_protocol="tcp", from_port=port_low, to_port=port_high, description=f"{what} from the GPU nodes",
            opts=scope.child)
    aws.vpc.SecurityGroupEgressRule(
        f"{name}-out-slurmd", security_group_id=head_sg_id, referenced_security_group_id=node_sg_id,
        ip_protocol="tcp", from_port=SLURMD_PORT, to_port=SLURMD_PORT, description="slurmd on the GPU nodes",
        opts=scope.child)
    aws.vpc.SecurityGroupEgressRule(
        f"{name}-out-https", security_group_id=head_sg_id, cidr_ipv4=OPEN_V4, ip_protocol="tcp", from_port=443,
        to_port=443, description="HTTPS out through NAT (Secrets Manager, Auto Scaling, SSM)", opts=scope.child)


def munge_secret(scope: ClusterScope, key_arn: pulumi.Input[str]) -> aws.secretsmanager.Secret:
    """The munge key's secret on the stack key, without a value (the head node puts it)."""
    base = stack_base(scope.spec.name, scope.spec.environment)
    return aws.secretsmanager.Secret(
        f"{base}-munge-key", description=f"gpufleet {base}: the Slurm cluster's munge key (put by the head node)",
        kms_key_id=key_arn, tags=scope.tags, opts=scope.child)


def _cloud_values(region: str, secret_arn: str) -> dict[str, str]:
    """The settings scripts/slurm-aws.sh reads."""
    return {"GPUFLEET_SLURM_REGION": region, "GPUFLEET_MUNGE_SECRET": secret_arn}


def head_cloud_config(cluster: ResolvedCluster, secret_arn: str) -> str:
    """The head node's cloud-config: the neutral files, its settings and AWS's part of the scripts."""
    return cloud_head_config(cluster, "aws", _cloud_values(cluster.spec.region, secret_arn))


def head_user_data(cluster: ResolvedCluster, secret_arn: str) -> str:
    """The head node's user data, gzipped and base64 (userDataBase64)."""
    return packed_head_user_data(cluster, "aws", _cloud_values(cluster.spec.region, secret_arn))


def slurm_head(scope: ClusterScope, subnet_ids: dict[str, pulumi.Output[str]], head_sg: aws.ec2.SecurityGroup,
               node_sg_id: pulumi.Input[str], key_arn: pulumi.Input[str], secret: aws.secretsmanager.Secret,
               account_id: pulumi.Input[str]) -> SlurmHead:
    """The head node, its role and its group's rules."""
    spec, resolved = scope.spec, scope.resolved
    refuse_elastic_without_power_program(resolved)
    name = slurm_base(scope)
    head = spec.scheduler.head_node or HeadNode()
    zone = head.zone or spec.network.zones[0]
    head_access(scope, head_sg.id, node_sg_id)
    groups = [g.names["scaling_group"] for g in resolved.groups if g.spec.provisioner == "autoscaling"]
    profile = head_identity(name, spec.region, account_id, secret.arn, key_arn, groups,
                            spec.identity.permissions_boundary, scope.tags, scope.child)
    image = resolved.image
    # Rendered once with a secret ARN of the longest form (a name of 512 characters, Secrets Manager's CreateSecret
    # limit): a user data over EC2's cap is reported before any resource, not from inside the engine.
    head_user_data(resolved, f"arn:aws:secretsmanager:{spec.region}:{'0' * 12}:secret:{'s' * 512}-{'0' * 6}")
    instance = aws.ec2.Instance(
        name,
        ami=image.id if image else None,
        instance_type=head_node_type(resolved),
        subnet_id=subnet_ids[zone],
        vpc_security_group_ids=[head_sg.id],
        associate_public_ip_address=False,
        iam_instance_profile=profile.name,
        metadata_options=aws.ec2.InstanceMetadataOptionsArgs(
            http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=HEAD_METADATA_HOP_LIMIT),
        root_block_device=aws.ec2.InstanceRootBlockDeviceArgs(
            encrypted=True, kms_key_id=key_arn, volume_size=head.disk_gb, volume_type="gp3"),
        user_data_base64=secret.arn.apply(lambda arn: head_user_data(resolved, arn)),
        tags={**scope.tags, **ROLE_TAG, "Name": name},
        volume_tags={**scope.tags, **ROLE_TAG},
        opts=scope.child,
    )
    return SlurmHead(address=instance.private_ip, secret_arn=secret.arn)


def node_user_data(cluster: ResolvedCluster, group: ResolvedGroup, user_data: str, head_address: str,
                   secret_arn: str) -> str:
    """The group's cloud-config with the Slurm join after the node check."""
    files = node_join_files(group, head_site(), "aws", head_address, _cloud_values(cluster.spec.region, secret_arn))
    return cloud_config_with(user_data, files, [JOIN_UNIT])
