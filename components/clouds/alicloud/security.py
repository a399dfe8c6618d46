"""The node security group: all protocols among its members (ERIs use their ENI's rules), nothing inbound from
the internet, SSH only from admin CIDRs when listed."""

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
    # An explicit self rule as well, so a policy can see the members' reachability in the recorded inputs.
    alicloud.ecs.SecurityGroupRule(
        f"{name}-nodes-self",
        security_group_id=group.id,
        type="ingress",
        ip_protocol=ALL_PROTOCOLS,
        port_range=ALL_PORTS,
        source_security_group_id=group.id,
        policy="accept",
        nic_type="intranet",
        description="all traffic among nodes (eRDMA, NCCL)",
        opts=opts,
    )
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
