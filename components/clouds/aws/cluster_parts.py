"""What one step of the AWS cluster (cluster.py) hands the next: the network, the key, the node identity and the
shared file system, created or brought."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from ...bootstrap.operations import SharedMount


@dataclass(frozen=True)
class ClusterNetwork:
    """What the nodes and the file system live in, created or brought."""

    vpc_id: pulumi.Output[str]
    subnet_ids: dict[str, pulumi.Output[str]]
    """Private subnet per zone."""
    security_group_id: pulumi.Output[str]
    """The node security group, created or brought."""
    lustre_security_group: aws.ec2.SecurityGroup | None
    """The shared file system's group; None without storage.shared."""
    slurm_head_security_group: aws.ec2.SecurityGroup | None = None
    """The Slurm head node's group; None unless scheduler slurm."""


@dataclass(frozen=True)
class ClusterKey:
    arn: pulumi.Output[str]
    """The KMS key, created or brought."""
    autoscaling_role_arn: pulumi.Output[str] | None
    """The groups' own Auto Scaling role (per-cluster), made before the key that names it; None: the default."""


@dataclass(frozen=True)
class NodeIdentity:
    """What the nodes run as."""

    instance_profile_arn: pulumi.Output[str]
    role_arn: pulumi.Output[str] | None
    """None when the stack brings its instance profile."""


@dataclass(frozen=True)
class SharedFileSystem:
    """The file system and the mount every node renders once its names are known."""

    file_system_id: pulumi.Output[str]
    mount: pulumi.Output[SharedMount]


@dataclass(frozen=True)
class AlarmTarget:
    """The topic alarms and the budget notify, created or brought."""

    arn: pulumi.Output[str]
    publish_policy: aws.sns.TopicPolicy | None
    """The created topic's policy that lets CloudWatch and Budgets publish; None for a brought topic."""


@dataclass(frozen=True)
class SlurmHead:
    """What a Slurm cluster's nodes join with (slurm_head.py)."""

    address: pulumi.Output[str]
    """The head node's private address, slurmctld's."""
    secret_arn: pulumi.Output[str]
    """The munge key's secret."""
