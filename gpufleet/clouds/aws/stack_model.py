"""The AWS stack-file settings: the network, identity and security group a user may bring; the image stack's
builders and key."""

from __future__ import annotations

import re
from ipaddress import IPv4Network
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from ...stackfile.buckets import S3Uri
from ...stackfile.keys import arn_accounts, key_problem
from ...stackfile.models import ClusterSpec, ImagesSpec, Network, NodeGroup
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
_KMS_ARN_HEAD = r"^arn:aws(?:-[a-z]+)*:kms:(?P<region>[a-z]{2}(?:-[a-z]+)+-\d+):\d{12}:"
_KMS_KEY_ID = r"key/(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|mrk-[0-9a-f]{32})"
KMS_KEY_ARN = re.compile(rf"{_KMS_ARN_HEAD}(?:{_KMS_KEY_ID}|alias/[A-Za-z0-9/_-]{{1,250}})$")
KMS_KEY_ARN_HELP = (
    "a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/KEY-ID) or alias ARN (arn:aws:kms:REGION:ACCOUNT:alias/NAME): "
    "Image Builder takes no bare key id or alias name"
)


# After the bucket (S3Uri judges it: spec/buckets.py), a prefix without IAM's wildcards ('*', '?') or policy
# variables ('${'): the node policy's ARNs are built from it and must not widen.
PREFIX_WIDENS = re.compile(r"[*?$]")
# A KMS key ARN (no alias: IAM authorizes kms:Decrypt against the key's ARN, an alias ARN in Resource matches no
# key use; KMS Developer Guide, "Using aliases to control access to KMS keys").
KMS_KEY_ONLY_ARN = re.compile(rf"{_KMS_ARN_HEAD}{_KMS_KEY_ID}$")


def _s3_prefixes(prefixes: list[str]) -> list[str]:
    bad = [uri for uri in prefixes if PREFIX_WIDENS.search(uri.removeprefix("s3://").partition("/")[2])]
    if bad:
        raise ValueError(f"{', '.join(map(repr, bad))}: a prefix takes no wildcard ('*', '?') or '$'")
    if len(set(prefixes)) != len(prefixes):
        raise ValueError("prefixes repeat; list each once")
    return prefixes


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
    s3_write_prefixes: list[S3Uri] = Field(
        default_factory=list,
        description="s3://bucket/prefix the nodes may write (checkpoints; multipart uploads included). Writing "
        "grants no read: list a prefix in s3_read_prefixes too for jobs to resume from it",
    )
    s3_kms_keys: list[str] = Field(
        default_factory=list,
        description="key ARNs (arn:aws:kms:REGION:ACCOUNT:key/ID, in the stack's region) of the customer-managed "
        "keys the read and write buckets are encrypted with: nodes may decrypt and generate data keys with them "
        "through S3 only. The key's own policy must admit the node role too where it is in another account",
    )
    permissions_boundary: str | None = Field(None, description="ARN of a permissions boundary policy")
    instance_profile_arn: str | None = Field(
        None, description="bring: an existing instance profile; unset: gpufleet creates a least-privilege role"
    )
    service_linked_roles: ServiceLinkedRoles = Field("per-cluster", description=SERVICE_LINKED_ROLES_HELP)

    @field_validator("s3_read_prefixes", "s3_write_prefixes")
    @classmethod
    def _prefixes(cls, value: list[str]) -> list[str]:
        return _s3_prefixes(value)

    @field_validator("s3_kms_keys")
    @classmethod
    def _key_arns(cls, value: list[str]) -> list[str]:
        bad = [key for key in value if not KMS_KEY_ONLY_ARN.match(key)]
        if bad:
            raise ValueError(f"{', '.join(map(repr, bad))}: give key ARNs, arn:aws:kms:REGION:ACCOUNT:key/KEY-ID")
        if len(set(value)) != len(value):
            raise ValueError("keys repeat; list each once")
        return value


InstanceRefresh = Literal["none", "rolling"]
INSTANCE_REFRESH_HELP = (
    "what a launch template change (a new pinned image, user data, a setting) does to running nodes. none "
    "(default): nothing; nodes launched from then on boot the new template, running ones keep theirs until you "
    "replace them between jobs (aws autoscaling start-instance-refresh). rolling: Auto Scaling replaces running "
    "nodes at once, 10% at a time (a node replaced under a distributed training job ends the job)"
)


class AwsNodeGroupSettings(NodeGroup):
    """A node group, and what a changed launch template does to its running nodes (Auto Scaling groups)."""

    instance_refresh: InstanceRefresh = Field("none", description=INSTANCE_REFRESH_HELP)


class AwsClusterSpec(ClusterSpec):
    cloud: Literal["aws"] = Field(..., description="aws | azure | alicloud: picks the cloud's fields below")
    network: AwsNetworkSettings = Field(
        ...,
        description="the VPC: created (cidr, zones) or brought (vpc_id, subnet ids)",
    )
    node_groups: list[AwsNodeGroupSettings] = Field(  # type: ignore[assignment]
        ..., min_length=1, description="the GPU node groups, one Auto Scaling group or EC2 Fleet each")
    identity: AwsIdentitySettings = Field(
        default_factory=AwsIdentitySettings,
        description="the node role: created least-privilege, or brought by ARN",
    )


def _key_problem(key: str, region: str, accounts: frozenset[str] = frozenset()) -> str | None:
    """Why `key` cannot encrypt the AMI in `region` (and, given `accounts`, in that account), or None."""
    if KMS_KEY_ARN.match(key) is None:
        return key_problem("aws", key, region) or f"{key!r} is not {KMS_KEY_ARN_HELP}"
    return key_problem("aws", key, region, accounts)


class AwsBuildNetwork(StrictModel):
    """Where the build instance runs: a created network (a VPC with one private subnet, NAT egress, SSM endpoints
    and a flow log) and a build security group admitting nothing inbound, or a brought subnet and group."""

    cidr: IPv4Network = Field(
        IPv4Network("10.254.0.0/22"),
        description="create: the build VPC's CIDR (its own VPC, so any free range; /22 or larger: a private subnet "
        "of a quarter, the NAT's subnet in the last)",
    )
    zone: str | None = Field(
        None, description="create: the zone of the private subnet, where the build types are offered; unset: "
        "REGIONa of the build region",
    )
    subnet_id: str | None = Field(
        None, pattern=r"^subnet-[0-9a-f]{8,17}$",
        description="bring: a subnet of the build region with egress to apt and NVIDIA's repository (HTTP, HTTPS) "
        "and to SSM, S3 and Image Builder (HTTPS), through NAT or endpoints; with security_group_id",
    )
    security_group_id: str | None = Field(
        None, pattern=r"^sg-[0-9a-f]{8,17}$",
        description="bring: the build instance's security group in the subnet's VPC: no ingress, egress as above",
    )
    log_retention_days: int = Field(
        30, strict=True, ge=1,
        description="create: days the build VPC's flow logs are kept (a value CloudWatch Logs accepts: catalog limits)",
    )

    @field_validator("cidr")
    @classmethod
    def _splittable(cls, cidr: IPv4Network) -> IPv4Network:
        from components.clouds.aws.subnets import private_subnet_cidrs

        if private_subnet_cidrs(cidr, 1) is None:
            raise ValueError(f"{cidr} is too small to split into a private and a public subnet; use a /22 or larger")
        return cidr

    @model_validator(mode="after")
    def _create_or_bring(self) -> AwsBuildNetwork:
        if (self.subnet_id is None) != (self.security_group_id is None):
            raise ValueError("bring subnet_id and security_group_id together (or neither, to create them)")
        if self.subnet_id is not None and "log_retention_days" in self.model_fields_set:
            raise ValueError("log_retention_days is the created build VPC's flow log retention: a brought subnet's "
                             "VPC keeps its owner's flow logs; remove it")
        return self


# What a created build network keeps between bakes (components/clouds/aws/build_network.py, network.py): billed by
# the hour on AWS's VPC pricing page (NAT gateway, public IPv4 address) and AWS PrivateLink pricing (interface
# endpoints; the S3 gateway endpoint is free). The catalog holds instance prices only, so the plan says unpriced.
BUILD_NETWORK_STANDING = (
    "the build network stays between bakes: 1 NAT gateway (per hour and per GB), 1 public IPv4 address (Elastic IP) "
    "and 3 interface endpoints (ssm, ssmmessages, ec2messages; per hour per zone): unpriced, the catalog has no VPC "
    "prices (https://aws.amazon.com/vpc/pricing/, https://aws.amazon.com/privatelink/pricing/); bring "
    "network.subnet_id to build in a network you keep anyway"
)


class AwsImagesSpec(ImagesSpec):
    """EC2 Image Builder: build instance types, the AMI key (created, or brought for every region)."""

    BUILD_FIELD = "build_instance_types"

    cloud: Literal["aws"] = Field(..., description="aws | azure | alicloud: picks the cloud's fields below")
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

    network: AwsBuildNetwork = Field(
        default_factory=AwsBuildNetwork,
        description="where the build runs: created (default; no default VPC needed) or brought",
    )

    @field_validator("network")
    @classmethod
    def _zone_of_the_build_region(cls, network: AwsBuildNetwork, info: ValidationInfo) -> AwsBuildNetwork:
        regions = info.data.get("regions")
        if network.zone is not None and regions and not re.fullmatch(rf"{re.escape(regions[0])}[a-z]", network.zone):
            raise ValueError(f"zone {network.zone!r} is not a zone of the build region {regions[0]}")
        return network

    def build_zone(self) -> str:
        """The created build subnet's zone."""
        return self.network.zone or f"{self.regions[0]}a"  # every region has an `a` zone (backend.default_zone)

    def unpriced_standing(self) -> list[str]:
        return [] if self.network.subnet_id else [BUILD_NETWORK_STANDING]

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
