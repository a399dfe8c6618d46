"""A brought VNet and node subnet: they exist, in the stack's subscription and region, and the subnet has a free
address for every node at size.max.

Read with Virtual Networks - Get and Subnets - Get (azure-rest-api-specs Microsoft.Network virtualNetwork.json:
VirtualNetwork.location, properties.addressSpace.addressPrefixes; Subnet.properties.addressPrefix(es),
ipConfigurations (every IP configuration holding an address of the subnet), natGateway, routeTable). Azure keeps 5
addresses of every subnet (catalog limit subnet_reserved_addresses), and a VM's network interface must be in the
same subscription and region as its VNet (learn.microsoft.com/azure/virtual-network/virtual-network-network-interface).
"""

from __future__ import annotations

from collections.abc import Iterator
from ipaddress import IPv4Network, ip_network
from typing import TYPE_CHECKING, Any

from ..concurrent import Check
from ..findings import Finding
from . import ids
from .clients import AzureClients, ask_or_missing

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster

VNET, SUBNET = "network.vnet_id", "network.subnet_id"


def network_checks(clients: AzureClients, cluster: ResolvedCluster) -> list[Check]:
    net = cluster.spec.network
    if not net.vnet_id or not net.subnet_id:
        return []
    return [lambda: list(_brought_network(clients, cluster, net.vnet_id, net.subnet_id))]


def _brought_network(
    clients: AzureClients, cluster: ResolvedCluster, vnet_id: str, subnet_id: str
) -> Iterator[Finding]:
    region = cluster.spec.region
    vnet_ref, subnet_ref = ids.parse(vnet_id), ids.parse(subnet_id)
    if vnet_ref is None or subnet_ref is None or len(subnet_ref.names) < 2:
        yield Finding("azure-vnet", SUBNET if vnet_ref else VNET, True, "not a VNet / subnet resource id",
                      "give the ids as `az network vnet subnet show --query id` prints them")
        return
    if vnet_ref.subscription.lower() != clients.subscription_id.lower():
        yield Finding("azure-vnet", VNET, True,
                      f"the VNet is in subscription {vnet_ref.subscription}, the scale sets deploy into "
                      f"{clients.subscription_id}; a VM's network interface must be in its VNet's subscription",
                      "bring a VNet of the deploying subscription, or deploy into the VNet's subscription "
                      "(AZURE_SUBSCRIPTION_ID)")
        return
    if not subnet_id.lower().startswith(vnet_id.rstrip("/").lower() + "/subnets/"):
        yield Finding("azure-vnet", SUBNET, True, f"the subnet is not in the brought VNet {vnet_ref.names[0]}",
                      "give a subnet of network.vnet_id, or the VNet that holds the subnet")
        return
    network = clients.network
    vnet = ask_or_missing(clients, f"the VNet {vnet_id}",
                          lambda: network.virtual_networks.get(vnet_ref.resource_group, vnet_ref.names[0]))
    if vnet is None:
        yield Finding("azure-vnet", VNET, True, f"no VNet {vnet_ref.names[0]} in resource group "
                      f"{vnet_ref.resource_group} of subscription {vnet_ref.subscription}",
                      "fix the id (az network vnet list --query '[].id'), or leave vnet_id and subnet_id unset and "
                      "set network.cidr to create one")
        return
    if ids.region_key(vnet.location or "") != ids.region_key(region):
        yield Finding("azure-vnet", VNET, True, f"the VNet is in {vnet.location}, the cluster in {region}",
                      f"bring a VNet in {region}, or move the cluster's region to {vnet.location}")
        return
    yield from _fabric_range(cluster, vnet)
    subnet = ask_or_missing(clients, f"the subnet {subnet_id}", lambda: network.subnets.get(
        subnet_ref.resource_group, subnet_ref.names[0], subnet_ref.names[1]))
    if subnet is None:
        yield Finding("azure-subnet", SUBNET, True, f"the VNet {vnet_ref.names[0]} has no subnet {subnet_ref.names[1]}",
                      f"fix the id (az network vnet subnet list -g {vnet_ref.resource_group} --vnet-name "
                      f"{vnet_ref.names[0]} --query '[].id')")
        return
    yield from _free_addresses(cluster, subnet)
    if subnet.nat_gateway is None and subnet.route_table is None:
        yield Finding("azure-subnet", SUBNET, False,
                      "the subnet has no NAT gateway and no route table: nodes get no outbound access (gpufleet's "
                      "nodes have no public IP), so metrics and package mirrors are out of reach",
                      "attach a NAT gateway to the subnet, or a route table to your egress firewall")


def _prefix(subnet: Any) -> IPv4Network | None:
    for text in [subnet.address_prefix, *(subnet.address_prefixes or [])]:
        if text:
            found = ip_network(text, strict=False)
            if isinstance(found, IPv4Network):
                return found
    return None


def _free_addresses(cluster: ResolvedCluster, subnet: Any) -> Iterator[Finding]:
    prefix = _prefix(subnet)
    if prefix is None:
        yield Finding("azure-subnet", SUBNET, True, "the subnet has no IPv4 address prefix", "bring an IPv4 subnet")
        return
    usable = cluster.usable_addresses(prefix)
    used = len(subnet.ip_configurations or [])
    free = usable - used
    # One node subnet serves every zone: every group's nodes at max size count against it.
    needed = cluster.addresses_at_max(per_zone=False).get("", 0)
    if needed > free:
        reserved = prefix.num_addresses - usable
        yield Finding(
            "azure-subnet", SUBNET, True,
            f"subnet {prefix}: {prefix.num_addresses:,} addresses, {reserved} reserved by Azure, {used:,} in use, "
            f"{free:,} free; the node groups at size.max need {needed:,}",
            f"bring a subnet with at least {needed:,} free addresses (a /{_prefix_for(needed + reserved + used)} holds "
            "them with what is in use now), or lower size.max",
        )


def _prefix_for(addresses: int) -> int:
    bits = max(addresses - 1, 1).bit_length()
    return max(0, 32 - bits)


def _fabric_range(cluster: ResolvedCluster, vnet: Any) -> Iterator[Finding]:
    """InfiniBand reserves a range (catalog limit ib_reserved_cidr) a brought VNet must not use."""
    if not any(group.rdma for group in cluster.groups):
        return
    reserved = IPv4Network(str(cluster.catalog.limit("azure", "ib_reserved_cidr")))
    space = vnet.address_space.address_prefixes if vnet.address_space else []
    for text in space or []:
        found = ip_network(text, strict=False)
        if isinstance(found, IPv4Network) and found.overlaps(reserved):
            yield Finding("azure-vnet", VNET, True,
                          f"the VNet's address space {found} overlaps {reserved}, which the InfiniBand network "
                          "reserves",
                          "bring a VNet outside that range for InfiniBand groups")
