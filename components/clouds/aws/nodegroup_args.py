"""What one AWS node group is built from (AwsNodeGroup's inputs), apart from the component so the EKS node parts
(eks_nodes.py) read it without importing the component that uses them."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from gpufleet.catalog import InstanceType
from gpufleet.clouds.aws.stack_model import AwsNodeGroupSettings

from ..hooks import GroupHooks
from .eks_join import EksJoin

# What a node group over EC2's user data limit shortens (the error names it).
USER_DATA_REMEDY = "shorten checkpoint_hook or the fallback instance types"


@dataclass(frozen=True)
class NodeGroupArgs:
    """Inputs of AwsNodeGroup."""

    group: AwsNodeGroupSettings
    """The validated node group from the stack file."""
    types: list[InstanceType]
    """Catalog rows of group.instance_types, primary first."""
    rdma: bool
    """Whether the fabric is wired (rdma required, or auto on a type that has one)."""
    asg_name: str
    """Explicit group name, known to the IAM policy and the bootstrap before the group exists."""
    image_id: str | None
    """AMI id from images/lock.yaml; None while the profile is unbaked there (the template then sets none)."""
    image_tags: dict[str, str]
    """Launch-template tags naming the image profile and its lock status (gpufleet.lock.status)."""
    subnet_ids: list[pulumi.Input[str]]
    """Private subnets; exactly one for RDMA groups."""
    security_group_id: pulumi.Input[str]
    """Node security group, set on every interface."""
    instance_profile_arn: pulumi.Input[str]
    """Instance profile of the nodes."""
    key_arn: pulumi.Input[str]
    """KMS key of every volume."""
    root_volume_gb: int
    """Root volume size."""
    user_data: pulumi.Input[str]
    """Rendered cloud-init (an output where it names a resource made in the same run, e.g. the file system)."""
    hooks: GroupHooks
    """Lifecycle hooks of an Auto Scaling group (the bootstrap completes the same names)."""
    tags: dict[str, str]
    """Tags for every resource and launched instance."""
    service_linked_role_arn: pulumi.Input[str] | None = None
    """The Auto Scaling group's own service-linked role (the one the stack key names); None: the account's
    default AWSServiceRoleForAutoScaling."""
    eks: EksJoin | None = None
    """scheduler kubernetes: the EKS cluster the nodes join; None: a VM cluster."""
