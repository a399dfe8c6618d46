"""An image stack (`gpufleet:images`, EC2 Image Builder): its build types offered where the build runs, its
brought subnet and security group, the AMI key of the build region and of every copy region."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..concurrent import Check
from ..findings import Finding
from .brought import check_key
from .clients import AwsClients, ask
from .placement import OFFERING, offered_zones

if TYPE_CHECKING:
    from gpufleet.clouds.aws.stack_model import AwsImagesSpec

BUILD = "aws-image-build"


def _build_zone(clients: AwsClients, spec: AwsImagesSpec) -> tuple[str | None, list[Finding]]:
    """The zone the build instance runs in (the brought subnet's, else the created subnet's), and what is wrong
    with the brought subnet and group."""
    network = spec.network
    if network.subnet_id is None:
        return spec.build_zone(), []
    answer = ask(clients, "ec2", "describe_subnets", missing=("InvalidSubnetID.",), SubnetIds=[network.subnet_id])
    subnets = (answer or {}).get("Subnets", [])
    if not subnets:
        return None, [Finding(BUILD, "network.subnet_id", True,
                              f"subnet {network.subnet_id} does not exist in {clients.region}",
                              f"give a subnet of {clients.region}, or leave network unset to create the build network")]
    subnet = subnets[0]
    findings = []
    groups = ask(clients, "ec2", "describe_security_groups", missing=("InvalidGroup.", "InvalidGroupId."),
                 GroupIds=[network.security_group_id])
    found = (groups or {}).get("SecurityGroups", [])
    if not found:
        findings.append(Finding(BUILD, "network.security_group_id", True,
                                f"security group {network.security_group_id} does not exist in {clients.region}",
                                f"give a security group of {subnet.get('VpcId')}"))
    elif found[0].get("VpcId") != subnet.get("VpcId"):
        findings.append(Finding(BUILD, "network.security_group_id", True,
                                f"security group {network.security_group_id} is in {found[0].get('VpcId')}, the subnet "
                                f"in {subnet.get('VpcId')}", f"give a security group of {subnet.get('VpcId')}"))
    return subnet.get("AvailabilityZone"), findings


def _build_types(clients: AwsClients, spec: AwsImagesSpec) -> list[Finding]:
    zone, findings = _build_zone(clients, spec)
    if zone is None:
        return findings
    offered = offered_zones(clients, list(spec.build_instance_types))
    usable = [name for name in spec.build_instance_types if zone in offered.get(name, set())]
    for index, name in enumerate(spec.build_instance_types):
        if zone not in offered.get(name, set()):
            findings.append(Finding(
                OFFERING, f"build_instance_types[{index}]", not usable,
                f"{name} is not offered in {zone}, where the build runs"
                + ("" if usable else "; no listed build type is"),
                f"list a type offered in {zone} (aws ec2 describe-instance-type-offerings --location-type "
                "availability-zone), or build in another zone"))
    return findings


def image_checks(clients: AwsClients, spec: AwsImagesSpec) -> list[Check]:
    checks: list[Check] = [lambda: _build_types(clients, spec)]
    if spec.kms_key != "create":
        checks.append(lambda: check_key(clients, "kms_key", spec.kms_key, spec.regions[0]))
    for region, key in sorted(spec.replica_kms_keys.items()):
        checks.append(lambda region=region, key=key: check_key(clients, f"replica_kms_keys.{region}", key, region))
    return checks
