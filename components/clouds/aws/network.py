"""VPC for GPU nodes: private subnets per zone, NAT egress, S3 and SSM endpoints; or a brought VPC."""

from __future__ import annotations

from dataclasses import dataclass, field
from ipaddress import IPv4Network

import pulumi
import pulumi_aws as aws

from .subnets import private_subnet_cidrs, public_subnet_cidrs

# Interface endpoints that let SSM manage nodes with no public ingress and no route to the internet needed.
SSM_ENDPOINTS = ("ssm", "ssmmessages", "ec2messages")


@dataclass(frozen=True)
class AwsNetworkArgs:
    """Inputs of AwsNetwork: create a VPC from cidr, or bring vpc_id and subnet_ids."""

    region: str
    """Region of the VPC, used in endpoint service names."""
    zones: list[str]
    """Availability zones, one private subnet each."""
    tags: dict[str, str]
    """Tags for every resource."""
    cidr: IPv4Network | None = None
    """Create a VPC with this CIDR; None to bring one."""
    vpc_id: str | None = None
    """Brought VPC id (with subnet_ids)."""
    subnet_ids: list[str] = field(default_factory=list)
    """Brought private subnet ids, in the order of `zones`."""
    nat_per_zone: bool = False
    """One NAT gateway per zone (prod) instead of one shared (dev, staging)."""


class AwsNetwork(pulumi.ComponentResource):
    """Private subnets by zone; `subnet_ids[zone]` is what node groups use."""

    vpc_id: pulumi.Output[str]
    subnet_ids: dict[str, pulumi.Output[str]]

    def __init__(self, name: str, args: AwsNetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:Network", name, None, opts)
        if args.cidr is None:
            self.vpc_id = pulumi.Output.from_input(args.vpc_id or "")
            self.subnet_ids = {
                zone: pulumi.Output.from_input(subnet) for zone, subnet in zip(args.zones, args.subnet_ids, strict=True)
            }
        else:
            self._create(name, args, args.cidr)
        self.register_outputs({"vpc_id": self.vpc_id, "subnet_ids": self.subnet_ids})

    def _create(self, name: str, args: AwsNetworkArgs, cidr_block: IPv4Network) -> None:
        child = pulumi.ResourceOptions(parent=self)
        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=str(cidr_block),
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags={**args.tags, "Name": f"{name}-vpc"},
            opts=child,
        )
        self.vpc_id = vpc.id
        # CIS AWS Foundations 5.4 (Checkov CKV2_AWS_12): the VPC's default security group admits and lets out
        # nothing. Given no ingress/egress, the provider removes the default rules when it adopts the group and
        # keeps it empty (pulumi-aws ec2.DefaultSecurityGroup); gpufleet puts nothing in it.
        aws.ec2.DefaultSecurityGroup(
            f"{name}-default", vpc_id=vpc.id, tags={**args.tags, "Name": f"{name}-default-closed"}, opts=child
        )
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags=args.tags, opts=child)
        public_rt = aws.ec2.RouteTable(
            f"{name}-public",
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)],
            tags=args.tags,
            opts=child,
        )
        private_cidrs = private_subnet_cidrs(cidr_block, len(args.zones)) or []
        public_cidrs = public_subnet_cidrs(cidr_block, len(args.zones))
        nat_zones = args.zones if args.nat_per_zone else args.zones[:1]
        nats: dict[str, aws.ec2.NatGateway] = {}
        for zone, cidr in zip(args.zones, public_cidrs, strict=True):
            if zone not in nat_zones:
                continue
            public = self._subnet(f"{name}-public-{zone}", vpc.id, cidr, zone, public_rt.id, args.tags)
            eip = aws.ec2.Eip(f"{name}-nat-{zone}", domain="vpc", tags=args.tags, opts=child)
            nats[zone] = aws.ec2.NatGateway(
                f"{name}-nat-{zone}",
                allocation_id=eip.allocation_id,
                subnet_id=public.id,
                tags=args.tags,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[igw]),
            )
        self.subnet_ids = {}
        private_rts = []
        for zone, cidr in zip(args.zones, private_cidrs, strict=True):
            nat = nats.get(zone) or nats[nat_zones[0]]
            route_table = aws.ec2.RouteTable(
                f"{name}-private-{zone}",
                vpc_id=vpc.id,
                routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat.id)],
                tags=args.tags,
                opts=child,
            )
            subnet = self._subnet(f"{name}-private-{zone}", vpc.id, cidr, zone, route_table.id, args.tags)
            self.subnet_ids[zone] = subnet.id
            private_rts.append(route_table.id)
        self._endpoints(name, args, vpc, private_rts)

    def _subnet(
        self,
        name: str,
        vpc_id: pulumi.Output[str],
        cidr: IPv4Network,
        zone: str,
        route_table_id: pulumi.Output[str],
        tags: dict[str, str],
    ) -> aws.ec2.Subnet:
        """A subnet that gives no public IP on launch, associated with its route table."""
        child = pulumi.ResourceOptions(parent=self)
        subnet = aws.ec2.Subnet(
            name,
            vpc_id=vpc_id,
            cidr_block=str(cidr),
            availability_zone=zone,
            map_public_ip_on_launch=False,
            tags={**tags, "Name": name},
            opts=child,
        )
        aws.ec2.RouteTableAssociation(name, subnet_id=subnet.id, route_table_id=route_table_id, opts=child)
        return subnet

    def _endpoints(self, name: str, args: AwsNetworkArgs, vpc: aws.ec2.Vpc, route_tables: list) -> None:
        child = pulumi.ResourceOptions(parent=self)
        aws.ec2.VpcEndpoint(
            f"{name}-s3",
            vpc_id=vpc.id,
            service_name=f"com.amazonaws.{args.region}.s3",
            vpc_endpoint_type="Gateway",
            route_table_ids=route_tables,
            tags=args.tags,
            opts=child,
        )
        endpoint_sg = aws.ec2.SecurityGroup(
            f"{name}-endpoints",
            description="HTTPS from the VPC to its interface endpoints",
            vpc_id=vpc.id,
            ingress=[
                aws.ec2.SecurityGroupIngressArgs(
                    protocol="tcp", from_port=443, to_port=443, cidr_blocks=[str(args.cidr)],
                    description="HTTPS from inside the VPC",
                )
            ],
            tags=args.tags,
            opts=child,
        )
        for service in SSM_ENDPOINTS:
            aws.ec2.VpcEndpoint(
                f"{name}-{service}",
                vpc_id=vpc.id,
                service_name=f"com.amazonaws.{args.region}.{service}",
                vpc_endpoint_type="Interface",
                private_dns_enabled=True,
                subnet_ids=list(self.subnet_ids.values()),
                security_group_ids=[endpoint_sg.id],
                tags=args.tags,
                opts=child,
            )
