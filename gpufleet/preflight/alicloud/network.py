"""The brought network: the VPC, one vSwitch per zone with room for the nodes at size.max, the node security group.

API references (response shapes also in Alibaba's OpenAPI metadata, Vpc 2016-04-28 and Ecs 2014-05-26, mirrored in
dew-serverless/acs-sdk-php data/<product>/<version>/api-docs.json):
- VPC DescribeVpcs (alibabacloud.com/help/en/vpc/developer-reference/api-vpc-2016-04-28-describevpcs): VpcId filter;
  TotalCount 0 when the region has no such VPC.
- VPC DescribeVSwitchAttributes (.../api-vpc-2016-04-28-describevswitchattributes): VpcId, ZoneId, Status,
  AvailableIpAddressCount; 400 InvalidVSwitchId.NotFound.
- ECS DescribeSecurityGroupAttribute (alibabacloud.com/help/en/ecs/developer-reference/
  api-ecs-2014-05-26-describesecuritygroupattribute): VpcId, InnerAccessPolicy (Accept | Drop), Permissions.Permission[]
  (Direction, SourceGroupId, IpProtocol, Policy); 404 InvalidSecurityGroupId.NotFound.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from alibabacloud_ecs20140526 import models as ecs
from alibabacloud_vpc20160428 import models as vpc

from ..findings import Finding

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster

    from .clients import AlicloudClients

Check = Callable[[], list[Finding]]


def checks(cluster: ResolvedCluster, clients: AlicloudClients) -> list[Check]:
    net = cluster.spec.network
    found: list[Check] = []
    if net.vpc_id:
        found.append(lambda: brought_vpc(cluster, clients))
    for index, _ in enumerate(net.vswitch_ids):
        found.append(lambda index=index: brought_vswitch(cluster, clients, index))
    if net.security_group_id:
        found.append(lambda: brought_security_group(cluster, clients))
    return found


def brought_vpc(cluster: ResolvedCluster, clients: AlicloudClients) -> list[Finding]:
    vpc_id = cluster.spec.network.vpc_id
    body = clients.call("vpc", "DescribeVpcs", vpc.DescribeVpcsRequest(region_id=clients.region, vpc_id=vpc_id)) or {}
    found = [v for v in body.get("Vpcs", {}).get("Vpc", []) if v.get("VpcId") == vpc_id]
    if not found:
        return [Finding("alicloud-network", "network.vpc_id", True,
                        f"{clients.region} has no VPC {vpc_id} visible to this account (DescribeVpcs)",
                        f"give a VPC of {clients.region}, or set network.cidr to create one")]
    if found[0].get("Status") not in (None, "Available"):
        return [Finding("alicloud-network", "network.vpc_id", True,
                        f"VPC {vpc_id} is {found[0].get('Status')}, not Available",
                        "wait until it is Available, or bring another VPC")]
    return []


def brought_vswitch(cluster: ResolvedCluster, clients: AlicloudClients, index: int) -> list[Finding]:
    """The vSwitch of zones[index]: in the brought VPC, in that zone, with a free address for every node (and ERI) the
    groups using the zone may put there at size.max."""
    net = cluster.spec.network
    switch_id, field = net.vswitch_ids[index], f"network.vswitch_ids[{index}]"
    zone = net.zones[index] if index < len(net.zones) else None
    body = clients.call("vpc", "DescribeVSwitchAttributes", vpc.DescribeVSwitchAttributesRequest(
        region_id=clients.region, v_switch_id=switch_id), missing=("InvalidVSwitchId.NotFound",))
    if body is None or not body.get("VSwitchId"):
        return [Finding("alicloud-network", field, True,
                        f"{clients.region} has no vSwitch {switch_id} (DescribeVSwitchAttributes: InvalidVSwitchId."
                        "NotFound)", f"give a vSwitch of VPC {net.vpc_id} in {zone}")]
    findings: list[Finding] = []
    if body.get("VpcId") != net.vpc_id:
        findings.append(Finding("alicloud-network", field, True,
                                f"vSwitch {switch_id} belongs to VPC {body.get('VpcId')}, not network.vpc_id "
                                f"{net.vpc_id}", "give a vSwitch of the brought VPC, or bring its VPC"))
    if zone is not None and body.get("ZoneId") != zone:
        findings.append(Finding("alicloud-network", field, True,
                                f"vSwitch {switch_id} is in {body.get('ZoneId')}, but it stands for network.zones"
                                f"[{index}] {zone}", "list vswitch_ids in the order of network.zones, one per zone"))
        return findings
    need = cluster.addresses_at_max().get(zone or "", 0)
    free = body.get("AvailableIpAddressCount")
    if free is not None and int(free) < need:
        findings.append(Finding(
            "alicloud-network", field, True,
            f"vSwitch {switch_id} ({body.get('CidrBlock')}, {zone}) has {int(free):,} free addresses; the node groups "
            f"in {zone} take {need:,} at size.max (a node's primary ENI and each ERI take one)",
            "bring a larger vSwitch, free addresses in it, or lower size.max",
        ))
    if body.get("Status") not in (None, "Available"):
        findings.append(Finding("alicloud-network", field, False, f"vSwitch {switch_id} is {body.get('Status')}",
                                "wait until it is Available"))
    return findings


def brought_security_group(cluster: ResolvedCluster, clients: AlicloudClients) -> list[Finding]:
    """In the nodes' VPC, and open to all traffic among its members (NCCL and eRDMA pick their ports)."""
    net = cluster.spec.network
    group_id = net.security_group_id
    body = clients.call("ecs", "DescribeSecurityGroupAttribute", ecs.DescribeSecurityGroupAttributeRequest(
        region_id=clients.region, security_group_id=group_id, direction="ingress"),
        missing=("InvalidSecurityGroupId.NotFound",))
    field = "network.security_group_id"
    if body is None:
        return [Finding("alicloud-network", field, True,
                        f"{clients.region} has no security group {group_id} (DescribeSecurityGroupAttribute: "
                        "InvalidSecurityGroupId.NotFound)", "give a security group of the nodes' VPC, or unset it")]
    findings: list[Finding] = []
    if net.vpc_id is None:
        findings.append(Finding("alicloud-network", field, True,
                                f"security group {group_id} belongs to VPC {body.get('VpcId')}, and gpufleet creates "
                                "the VPC from network.cidr: the nodes cannot join a group of another VPC",
                                "bring that VPC (network.vpc_id and vswitch_ids), or unset security_group_id"))
    elif body.get("VpcId") != net.vpc_id:
        findings.append(Finding("alicloud-network", field, True,
                                f"security group {group_id} belongs to VPC {body.get('VpcId')}, not network.vpc_id "
                                f"{net.vpc_id}", "give a security group of the brought VPC"))
    rules = body.get("Permissions", {}).get("Permission", [])
    self_rule = any(r.get("SourceGroupId") == group_id and str(r.get("IpProtocol", "")).upper() == "ALL"
                    and str(r.get("Policy", "Accept")).lower() == "accept"
                    and r.get("Direction", "ingress") == "ingress" for r in rules)
    if body.get("InnerAccessPolicy") != "Accept" and not self_rule:
        findings.append(Finding(
            "alicloud-network", field, True,
            f"security group {group_id} has InnerAccessPolicy {body.get('InnerAccessPolicy')} and no rule accepting "
            "all protocols from itself: nodes could not reach each other's NCCL and eRDMA ports",
            "set its inner access policy to Accept, or add an ingress rule for all protocols from the group itself",
        ))
    return findings
