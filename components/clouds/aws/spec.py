"""The AWS stack-file settings: the network, identity and security group a user may bring; the image stack's
builders and key."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from ...spec.buckets import S3Uri
from ...spec.keys import arn_accounts, key_problem
from ...spec.models import ClusterSpec, ImagesSpec, Network
from ...yaml_model import StrictModel

ServiceLinkedRoles = Literal["per-cluster", "create", "exists"]
SERVICE_LINKED_ROLES_HELP = (
    "aws: per-cluster | create | exists: the service-linked roles that the created KMS key's policy names (KMS "
    "refuses a policy naming a role that does not exist). per-cluster (default, works in a new and a used "
    "account): the cluster's own Auto Scaling role AWSServiceRoleForAutoScaling_<name>-<environment>, created "
    "before the key and used by its groups; the EC2 Fleet role, which takes no suffix, is admitted whether or "
    "not it exists yet. create: the account-wide AWSServiceRoleForAutoScaling (and AWSServiceRoleForEC2Fleet), "
    "which fails where they exist (any Auto Scaling group or EC2 Fleet made them). exists: name those, create "
    "nothing"
)
# A KMS key ARN (key id, or mrk- multi-Region key id) or alias ARN: the forms Image Builder's recipe block
# device takes ("either the Key ARN or the Alias ARN", EbsInstanceBlockDeviceSpecification.kmsKeyId). Alias
# names: letters, digits, '/', '_' and '-' (KMS CreateAlias AliasName).
KMS_KEY_ARN = re.compile(
    r"^arn:aws(?:-[a-z]+)*:kms:(?P<region>[a-z]{2}(?:-[a-z]+)+-\d+):\d{12}:"
    r"(?:key/(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|mrk-[0-9a-f]{32})"
    r"|alias/[A-Za-z0-9/_-]{1,250})$"
)
KMS_KEY_ARN_HELP = (
    "a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/KEY-ID) or alias ARN (arn:aws:kms:REGION:ACCOUNT:alias/NAME): "
    "Image Builder takes no bare key id or alias name"
)


class AwsNetworkSettings(Network):
    """Create a VPC from `cidr`, or bring one with vpc_id and one private subnet per zone."""

    BRING = ("vpc_id", "subnet_ids")
    PER_ZONE = "subnet_ids"

    vpc_id: str | None = Field(None, pattern=r"^vpc-[0-9a-f]{8,17}$", description="bring: existing VPC id")
    subnet_ids: list[str] = Field(
        default_factory=list, description="bring: existing private subnet ids, one per zone in network.zones order"
    )
    security_group_id: str | None = Field(
        None,
        pattern=r"^sg-[0-9a-f]{8,17}$",
        description="bring: an existing node security group; it must allow all traffic among its members "
        "(EFA needs it both ways). Unset: gpufleet creates one.",
    )


class AwsIdentitySettings(StrictModel):
    """What the node role may reach, or an instance profile brought by the user."""

    s3_read_prefixes: list[S3Uri] = Field(
        default_factory=list, description="s3://bucket/prefix the nodes may read (datasets, checkpoints)"
    )
    permissions_boundary: str | None = Field(None, description="ARN of a permissions boundary policy")
    instance_profile_arn: str | None = Field(
        None, description="bring: an existing instance profile; unset: gpufleet creates a least-privilege role"
    )
    service_linked_roles: ServiceLinkedRoles = Field("per-cluster", description=SERVICE_LINKED_ROLES_HELP)


class AwsClusterSpec(ClusterSpec):
    cloud: Literal["aws"]
    network: AwsNetworkSettings
    identity: AwsIdentitySettings = Field(default_factory=AwsIdentitySettings)


def _key_problem(key: str, region: str, accounts: frozenset[str] = frozenset()) -> str | None:
    """Why `key` cannot encrypt the AMI in `region` (and, given `accounts`, in that account), or None."""
    if KMS_KEY_ARN.match(key) is None:
        return key_problem("aws", key, region) or f"{key!r} is not {KMS_KEY_ARN_HELP}"
    return key_problem("aws", key, region, accounts)


class AwsImagesSpec(ImagesSpec):
    """EC2 Image Builder: build instance types, the AMI key (created, or brought for every region)."""

    BUILD_FIELD = "build_instance_types"

    cloud: Literal["aws"]
    build_instance_types: list[str] = Field(
        default_factory=lambda: ["g5.2xlarge"],
        min_length=1,
        description="EC2 instance types of the build and test instances, tried in order; no GPU is needed to "
        "install drivers",
    )
    kms_key: str = Field(
        "create",
        description="create (a multi-Region key and a replica in every other region) | the "
        f"key of the build region: {KMS_KEY_ARN_HELP}",
    )
    replica_kms_keys: dict[str, str] = Field(
        default_factory=dict,
        validate_default=True,  # a brought kms_key without it is an error too
        description="with a brought kms_key: region -> the key ARN or alias ARN of every other region (a KMS key "
        "is regional; the AMI copy there is encrypted with it)",
    )

    @field_validator("build_instance_types")
    @classmethod
    def _unique_types(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("build instance types repeat; list each once")
        return value

    @field_validator("kms_key")
    @classmethod
    def _key_of_the_build_region(cls, key: str, info: ValidationInfo) -> str:
        regions = info.data.get("regions")
        if key != "create" and regions and (problem := _key_problem(key, regions[0])):
            raise ValueError(problem)
        return key

    @field_validator("replica_kms_keys")
    @classmethod
    def _a_key_for_every_other_region(cls, keys: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        regions, key = info.data.get("regions"), info.data.get("kms_key")
        if regions is None or key is None:
            return keys  # those fields failed: their errors name them
        if key == "create":
            if keys:
                raise ValueError("only with a brought kms_key; a created key is replicated to every region")
            return keys
        others = regions[1:]
        problems = [f"{region}: not one of the other regions {others}" for region in keys if region not in others]
        problems += [f"{region}: {problem}" for region, value in keys.items()
                     if region in others and (problem := _key_problem(value, region, arn_accounts(key)))]
        missing = [region for region in others if region not in keys]
        if missing:
            problems.append(f"a brought kms_key needs the key of {', '.join(missing)} too (a KMS key is regional)")
        if problems:
            raise ValueError("; ".join(problems))
        return keys
