"""What the stack brings instead of creating (gpufleet/clouds/aws/stack_model.py): the VPC, its subnets, the node
security group, KMS keys, the alarm topic, the instance profile and the permissions boundary. Each exists, is in
the stack's region and fits.

Not-found answers: InvalidVpcID.NotFound, InvalidSubnetID.NotFound, InvalidGroup.NotFound (and their .Malformed)
("Error codes for the Amazon EC2 API"); KMS NotFoundException (DescribeKey errors); SNS NotFound
(GetTopicAttributes errors); IAM NoSuchEntity (GetInstanceProfile, GetPolicy errors).
Fields read: Subnet.VpcId, AvailabilityZone, AvailableIpAddressCount; SecurityGroup.VpcId (EC2 API reference);
KeyMetadata.Arn, KeyState, KeyUsage, KeySpec (KMS DescribeKey).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..findings import Finding
from .clients import AwsClients, ask

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster

NETWORK = "aws-network"
KEY = "aws-kms-key"
TOPIC = "aws-alarm-topic"
IDENTITY = "aws-identity"


def check_vpc(clients: AwsClients, vpc_id: str) -> list[Finding]:
    answer = ask(clients, "ec2", "describe_vpcs", missing=("InvalidVpcID.",), VpcIds=[vpc_id])
    if answer and answer.get("Vpcs"):
        return []
    return [Finding(NETWORK, "network.vpc_id", True, f"VPC {vpc_id} does not exist in {clients.region}",
                    f"give a VPC of {clients.region} (aws ec2 describe-vpcs), or set network.cidr to create one")]


def check_subnet(clients: AwsClients, cluster: ResolvedCluster, index: int, subnet_id: str) -> list[Finding]:
    """Subnet `index` of network.subnet_ids: in the VPC, in zone network.zones[index], with free addresses for the
    node interfaces its zone takes at size.max."""
    field_path, network = f"network.subnet_ids[{index}]", cluster.spec.network
    answer = ask(clients, "ec2", "describe_subnets", missing=("InvalidSubnetID.",), SubnetIds=[subnet_id])
    subnets = (answer or {}).get("Subnets", [])
    if not subnets:
        return [Finding(NETWORK, field_path, True, f"subnet {subnet_id} does not exist in {clients.region}",
                        f"give a subnet of {network.vpc_id} in {clients.region} (aws ec2 describe-subnets)")]
    subnet, findings = subnets[0], []
    if network.vpc_id and subnet.get("VpcId") != network.vpc_id:
        findings.append(Finding(NETWORK, field_path, True,
                                f"subnet {subnet_id} is in {subnet.get('VpcId')}, not in network.vpc_id "
                                f"{network.vpc_id}",
                                f"give a subnet of {network.vpc_id}"))
    zone = network.zones[index] if index < len(network.zones) else None
    if zone is not None and subnet.get("AvailabilityZone") != zone:
        findings.append(Finding(NETWORK, field_path, True,
                                f"subnet {subnet_id} is in {subnet.get('AvailabilityZone')}, but "
                                f"network.zones[{index}] is {zone} (one subnet per zone, in network.zones order)",
                                f"give the subnet of {zone} here, or list {subnet.get('AvailabilityZone')} as "
                                f"network.zones[{index}]"))
    needed = cluster.addresses_at_max().get(zone or "", 0)
    free = int(subnet.get("AvailableIpAddressCount", 0))
    if needed > free:
        findings.append(Finding(NETWORK, field_path, True,
                                f"subnet {subnet_id} has {free:,} free addresses; the node interfaces in {zone} take "
                                f"{needed:,} at size.max",
                                f"give a subnet with at least {needed:,} free addresses, free some, or lower size.max"))
    return findings


def check_security_group(clients: AwsClients, group_id: str, vpc_id: str | None) -> list[Finding]:
    answer = ask(clients, "ec2", "describe_security_groups", missing=("InvalidGroup.", "InvalidGroupId."),
                 GroupIds=[group_id])
    groups = (answer or {}).get("SecurityGroups", [])
    if not groups:
        return [Finding(NETWORK, "network.security_group_id", True,
                        f"security group {group_id} does not exist in {clients.region}",
                        "give a security group of the brought VPC, or leave security_group_id unset to create one")]
    if vpc_id and groups[0].get("VpcId") != vpc_id:
        return [Finding(NETWORK, "network.security_group_id", True,
                        f"security group {group_id} belongs to {groups[0].get('VpcId')}, not network.vpc_id {vpc_id}",
                        f"give a security group of {vpc_id}")]
    return []


def check_key(clients: AwsClients, field_path: str, key: str, region: str | None = None) -> list[Finding]:
    """A brought KMS key exists, is enabled, is a symmetric encryption key (what EBS, CloudWatch Logs and SNS take)
    and lives in `region` (the stack's, by default)."""
    region = region or clients.region
    answer = ask(clients, "kms", "describe_key", missing=("NotFoundException", "InvalidArnException"), region=region,
                 KeyId=key)
    if answer is None:
        return [Finding(KEY, field_path, True, f"KMS key {key} was not found in {region}",
                        f"give a key of {region} this account may use (aws kms describe-key --key-id ...), or create")]
    meta: dict[str, Any] = answer["KeyMetadata"]
    problems = []
    arn_region = str(meta.get("Arn", "")).split(":")[3:4]
    if arn_region and arn_region[0] != region:
        problems.append(f"is in {arn_region[0]}, not {region}")
    if meta.get("KeyState") != "Enabled":
        problems.append(f"is {meta.get('KeyState')}")
    if meta.get("KeyUsage", "ENCRYPT_DECRYPT") != "ENCRYPT_DECRYPT" or \
            meta.get("KeySpec", "SYMMETRIC_DEFAULT") != "SYMMETRIC_DEFAULT":
        problems.append(f"is a {meta.get('KeySpec')} {meta.get('KeyUsage')} key (EBS and CloudWatch Logs take only "
                        "symmetric encryption keys)")
    if not problems:
        return []
    return [Finding(KEY, field_path, True, f"KMS key {meta.get('Arn', key)} " + "; ".join(problems),
                    f"give an enabled symmetric encryption key of {region}, or enable this one")]


def check_topic(clients: AwsClients, topic_arn: str) -> list[Finding]:
    answer = ask(clients, "sns", "get_topic_attributes", missing=("NotFound", "InvalidParameter"), TopicArn=topic_arn)
    if answer is not None:
        return []
    return [Finding(TOPIC, "monitoring.alarms.target", True, f"SNS topic {topic_arn} does not exist",
                    "give the ARN of an existing topic of the stack's region, or set target: create")]


def check_instance_profile(clients: AwsClients, profile_arn: str) -> list[Finding]:
    name = profile_arn.rsplit("/", 1)[-1]
    answer = ask(clients, "iam", "get_instance_profile", missing=("NoSuchEntity",), InstanceProfileName=name)
    if answer is None:
        return [Finding(IDENTITY, "identity.instance_profile_arn", True,
                        f"instance profile {name} does not exist in this account",
                        "give an existing instance profile's ARN, or leave it unset to create a least-privilege one")]
    roles = answer["InstanceProfile"].get("Roles", [])
    if not roles:
        return [Finding(IDENTITY, "identity.instance_profile_arn", True,
                        f"instance profile {name} holds no role: nodes would run without credentials",
                        "add the node role to it (aws iam add-role-to-instance-profile --instance-profile-name "
                        f"{name})")]
    return []


def check_boundary(clients: AwsClients, policy_arn: str) -> list[Finding]:
    answer = ask(clients, "iam", "get_policy", missing=("NoSuchEntity", "InvalidInput"), PolicyArn=policy_arn)
    if answer is not None:
        return []
    return [Finding(IDENTITY, "identity.permissions_boundary", True,
                    f"permissions boundary {policy_arn} does not exist (IAM refuses a role naming it)",
                    "give the ARN of an existing managed policy, or remove permissions_boundary")]
