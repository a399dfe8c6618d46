"""The node network: a VNet with one private node subnet (no default outbound access), egress through a NAT
gateway with a static public IP, and the node security group on the subnet; or a brought VNet and subnet."""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network

import pulumi
from pulumi_azure_native import network

from .security import node_security_group
from .subnets import node_subnet_cidr

STANDARD = "Standard"


@dataclass(frozen=True)
class AzureNetworkArgs:
    """Inputs of AzureNetwork: create a VNet from cidr, or bring vnet_id and subnet_id."""

    resource_group_name: pulumi.Input[str]
    """The cluster's resource group."""
    location: str
    """Azure region of every resource."""
    zones: list[str]
    """Zones the NAT gateway and its IP sit in; empty = regional."""
    admin_cidrs: list[str]
    """Sources allowed to SSH; empty = none."""
    tags: dict[str, str]
    """Tags for every resource."""
    cidr: IPv4Network | None = None
    """Create a VNet with this address space; None to bring one."""
    vnet_id: str | None = None
    """Brought VNet resource id (with subnet_id)."""
    subnet_id: str | None = None
    """Brought node subnet resource id."""
    key_vault_endpoint: bool = False
    """scheduler slurm: the created node subnet gets Key Vault's service endpoint (the munge key's vault admits it)."""


class AzureNetwork(pulumi.ComponentResource):
    """`subnet_id` is what the scale sets use; the NSG is created on a created subnet only."""

    vnet_id: pulumi.Output[str]
    subnet_id: pulumi.Output[str]
    vnet_name: pulumi.Output[str] | None
    """The created VNet's name, for subnets added beside the node subnet; None with a brought network."""
    nat_gateway_id: pulumi.Output[str] | None
    """The created NAT gateway; None with a brought network."""

    def __init__(self, name: str, args: AzureNetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:azure:Network", name, None, opts)
        if args.cidr is None:
            self.vnet_id = pulumi.Output.from_input(args.vnet_id or "")
            self.subnet_id = pulumi.Output.from_input(args.subnet_id or "")
            self.vnet_name = self.nat_gateway_id = None
        else:
            self._create(name, args, args.cidr)
        self.register_outputs({"vnet_id": self.vnet_id, "subnet_id": self.subnet_id})

    def _create(self, name: str, args: AzureNetworkArgs, cidr: IPv4Network) -> None:
        child = pulumi.ResourceOptions(parent=self)
        common = {"resource_group_name": args.resource_group_name, "location": args.location, "tags": args.tags}
        zones = args.zones[:1] or None  # a NAT gateway lives in one zone or none
        public_ip = network.PublicIPAddress(
            f"{name}-nat",
            sku=network.PublicIPAddressSkuArgs(name=STANDARD, tier="Regional"),
            public_ip_allocation_method="Static",
            public_ip_address_version="IPv4",
            zones=zones,
            **common,
            opts=child,
        )
        nat = network.NatGateway(
            f"{name}-nat",
            sku=network.NatGatewaySkuArgs(name=STANDARD),
            public_ip_addresses=[network.SubResourceArgs(id=public_ip.id)],
            idle_timeout_in_minutes=4,
            zones=zones,
            **common,
            opts=child,
        )
        nsg = node_security_group(name, args.admin_cidrs, common, child)
        vnet = network.VirtualNetwork(
            f"{name}-vnet",
            address_space=network.AddressSpaceArgs(address_prefixes=[str(cidr)]),
            **common,
            # Subnets are their own resources below: an inline list would fight them on every update.
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["subnets"]),
        )
        subnet = network.Subnet(
            f"{name}-nodes",
            resource_group_name=args.resource_group_name,
            virtual_network_name=vnet.name,
            address_prefix=str(node_subnet_cidr(cidr)),
            # Private: no implicit outbound IP; egress only through the NAT gateway.
            default_outbound_access=False,
            nat_gateway=network.SubResourceArgs(id=nat.id),
            network_security_group=network.NetworkSecurityGroupArgs(id=nsg.id),
            service_endpoints=[network.ServiceEndpointPropertiesFormatArgs(service="Microsoft.KeyVault")]
            if args.key_vault_endpoint
            else None,
            opts=child,
        )
        self.vnet_id = vnet.id
        self.subnet_id = subnet.id
        self.vnet_name = vnet.name
        self.nat_gateway_id = nat.id
