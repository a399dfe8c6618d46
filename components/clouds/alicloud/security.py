"""The node security group: all protocols among its members (ERIs use their ENI's rules), nothing inbound from
the internet, SSH only from admin CIDRs when listed; and one ERI lane group per ERI after a node's first."""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

ALL_PROTOCOLS = "all"
ALL_PORTS = "-1/-1"


def node_security_group(
    name: str, vpc_id: pulumi.Input[str], admin_cidrs: list[str], tags: dict[str, str], opts: pulumi.ResourceOptions
) -> alicloud.ecs.SecurityGroup:
    group = alicloud.ecs.SecurityGroup(
        f"{name}-nodes",
        security_group_name=f"{name}-nodes",
        description="GPU nodes: all traffic among themselves, egress through the NAT gateway",
        vpc_id=vpc_id,
        inner_access_policy="Accept",
        tags=tags,
        opts=opts,
    )
    _self_rule(f"{name}-nodes-self", group, "all traffic among nodes (eRDMA, NCCL)", opts)
    for index, cidr in enumerate(admin_cidrs):
        alicloud.ecs.SecurityGroupRule(
            f"{name}-nodes-ssh-{index}",
            security_group_id=group.id,
            type="ingress",
            ip_protocol="tcp",
            port_range="22/22",
            cidr_ip=cidr,
            policy="accept",
            nic_type="intranet",
            description="SSH from an admin network",
            opts=opts,
        )
    return group


def _self_rule(name: str, group: alicloud.ecs.SecurityGroup, description: str,
               opts: pulumi.ResourceOptions) -> alicloud.ecs.SecurityGroupRule:
    """An explicit rule from the group to itself on all protocols, so a policy can see the members' reachability in
    the recorded inputs (inner_access_policy alone is not a rule)."""
    return alicloud.ecs.SecurityGroupRule(
        name,
        security_group_id=group.id,
        type="ingress",
        ip_protocol=ALL_PROTOCOLS,
        port_range=ALL_PORTS,
        source_security_group_id=group.id,
        policy="accept",
        nic_type="intranet",
        description=description,
        opts=opts,
    )


def eri_lane_security_groups(
    name: str, vpc_id: pulumi.Input[str], lanes: int, tags: dict[str, str], opts: pulumi.ResourceOptions
) -> list[alicloud.ecs.SecurityGroup]:
    """One security group per ERI after a node's first (lanes 2..n), which only that ERI joins beside the node group
    (eri.py, eri_security_groups): it sets the ERI blocks of a scaling configuration apart. Its members are the
    same nodes as the node group's, so its self rule opens nothing the node group does not."""
    groups = []
    for lane in range(2, lanes + 1):
        group = alicloud.ecs.SecurityGroup(
            f"{name}-eri-{lane}",
            security_group_name=f"{name}-eri-{lane}",
            description=f"ERI {lane} of each GPU node, beside the node security group (sets the ERI apart in ESS)",
            vpc_id=vpc_id,
            inner_access_policy="Accept",
            tags=tags,
            opts=opts,
        )
        _self_rule(f"{name}-eri-{lane}-self", group, f"ERI {lane} of each node to the same ERI of the others", opts)
        groups.append(group)
    return groups
