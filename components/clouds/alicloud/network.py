"""VPC for GPU nodes: one vSwitch per zone, egress through an Enhanced NAT gateway with an EIP and one SNAT entry
per vSwitch; or a brought VPC and vSwitches. Nodes get no public IP."""

from __future__ import annotations

from dataclasses import dataclass, field
from ipaddress import IPv4Network

import pulumi
import pulumi_alicloud as alicloud

from .vswitches import vswitch_cidrs

EIP_BANDWIDTH_MBPS = "200"  # pay-by-traffic: the bandwidth caps egress, it is not billed


@dataclass(frozen=True)
class AlicloudNetworkArgs:
    """Create a VPC from cidr, or bring vpc_id and vswitch_ids (one per zone, in zones order)."""

    zones: list[str]
    tags: dict[str, str]
    base: str
    """The cluster in its environment (naming.stack_base): the VPC's and the EIP's names, unique in the region."""
    cidr: IPv4Network | None = None
    vpc_id: str | None = None
    vswitch_ids: list[str] = field(default_factory=list)


class AlicloudNetwork(pulumi.ComponentResource):
    """vSwitches by zone; `vswitch_ids[zone]` is what node groups use."""

    vpc_id: pulumi.Output[str]
    vswitch_ids: dict[str, pulumi.Output[str]]

    def __init__(self, name: str, args: AlicloudNetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:alicloud:Network", name, None, opts)
        if args.cidr is None:
            self.vpc_id = pulumi.Output.from_input(args.vpc_id or "")
            self.vswitch_ids = {
                zone: pulumi.Output.from_input(v) for zone, v in zip(args.zones, args.vswitch_ids, strict=True)
            }
        else:
            self._create(name, args, args.cidr)
        self.register_outputs({"vpc_id": self.vpc_id, "vswitch_ids": self.vswitch_ids})

    def _create(self, name: str, args: AlicloudNetworkArgs, cidr: IPv4Network) -> None:
        child = pulumi.ResourceOptions(parent=self)
        vpc = alicloud.vpc.Network(f"{name}-vpc", vpc_name=f"{args.base}-vpc", cidr_block=str(cidr), tags=args.tags,
                                   opts=child)
        self.vpc_id = vpc.id
        switches = {
            zone: alicloud.vpc.Switch(
                f"{name}-{zone}",
                vswitch_name=f"{name}-{zone}",
                vpc_id=vpc.id,
                cidr_block=str(block),
                zone_id=zone,
                tags=args.tags,
                opts=child,
            )
            for zone, block in zip(args.zones, vswitch_cidrs(cidr, len(args.zones)) or [], strict=True)
        }
        self.vswitch_ids = {zone: switch.id for zone, switch in switches.items()}
        nat = alicloud.vpc.NatGateway(
            f"{name}-nat",
            nat_gateway_name=f"{name}-nat",
            vpc_id=vpc.id,
            vswitch_id=switches[args.zones[0]].id,
            nat_type="Enhanced",
            payment_type="PayAsYouGo",
            internet_charge_type="PayByLcu",
            network_type="internet",
            tags=args.tags,
            opts=child,
        )
        eip = alicloud.ecs.EipAddress(
            f"{name}-nat",
            address_name=f"{args.base}-nat",
            internet_charge_type="PayByTraffic",
            payment_type="PayAsYouGo",
            bandwidth=EIP_BANDWIDTH_MBPS,
            tags=args.tags,
            opts=child,
        )
        association = alicloud.ecs.EipAssociation(
            f"{name}-nat", allocation_id=eip.id, instance_id=nat.id, instance_type="Nat", opts=child
        )
        for zone, switch in switches.items():
            alicloud.vpc.SnatEntry(
                f"{name}-snat-{zone}",
                snat_table_id=nat.snat_table_ids,
                source_vswitch_id=switch.id,
                snat_ip=eip.ip_address,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[association]),
            )
