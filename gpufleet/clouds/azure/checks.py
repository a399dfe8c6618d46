"""Checks only Azure stacks need: InfiniBand reaches only inside one scale set and reserves an address range;
a Uniform scale set runs one VM size and one priority; capacity reservations, keys and subnets have limits; and the
operations options (Azure Managed Lustre sizes and subnet, alert windows and target, autoscale window, budget
notifications)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from ipaddress import IPv4Network
from typing import TYPE_CHECKING

from components.clouds.azure.lustre_sizes import subnet_prefixlen, tier_of, tiers
from components.clouds.azure.subnets import NODE_SUBNET_BITS, SMALLEST_PREFIX, lustre_subnet_cidr

from ...stackfile.errors import SpecError
from ..network_fit import Split, size_problems

RSA_KEY_MIN_BITS = 2048  # Azure's minimum for ssh-rsa admin keys (Compute API SshPublicKey.keyData)

if TYPE_CHECKING:
    from ..backend import ResolvedCluster


def infiniband_limits(cluster: ResolvedCluster) -> Iterator[SpecError]:
    most = int(cluster.catalog.limit("azure", "ib_scale_set_max_vms"))
    reserved = IPv4Network(str(cluster.catalog.limit("azure", "ib_reserved_cidr")))
    ib_groups = [group for group in cluster.groups if group.rdma]
    for group in ib_groups:
        if group.spec.size.max > most:
            yield SpecError(
                group.path("size.max"),
                f"InfiniBand reaches only inside one scale set with singlePlacementGroup, at most {most} VMs "
                f"(300 through a free Azure support request; then set the limit in your fork); split the group "
                f"or lower size.max",
            )
    cidr = cluster.spec.network.cidr
    if ib_groups and cidr is not None and cidr.overlaps(reserved):
        yield SpecError("network.cidr", f"{cidr} overlaps {reserved}, which the InfiniBand network reserves; move it")


def one_size_per_scale_set(cluster: ResolvedCluster) -> Iterator[SpecError]:
    """A scale set has one sku: fallback sizes would need a second scale set, and IB never crosses two."""
    for group in cluster.groups:
        for j, name in enumerate(group.spec.instance_types[1:], start=1):
            yield SpecError(
                group.path(f"instance_types[{j}]"),
                f"an Azure scale set runs one VM size: {name} cannot be a fallback of "
                f"{group.spec.instance_types[0]}; give it its own node group",
            )


def capacity_fits_orchestration(cluster: ResolvedCluster) -> Iterator[SpecError]:
    prefix = str(cluster.catalog.limit("azure", "capacity_reservation_unsupported_prefix"))
    for group in cluster.groups:
        spec = group.spec
        if spec.capacity == "reservation":
            size = spec.instance_types[0]
            if size.startswith(prefix):
                yield SpecError(
                    group.path("capacity"),
                    f"Azure capacity reservations do not support ND-series sizes ({size}); use on-demand or spot",
                )
            elif group.rdma:
                yield SpecError(
                    group.path("capacity"),
                    "Azure capacity reservations do not support singlePlacementGroup scale sets, which InfiniBand "
                    "needs; set rdma: off or use on-demand",
                )
        if spec.capacity == "spot" and group.rdma and spec.on_demand_base:
            yield SpecError(
                group.path("on_demand_base"),
                "an InfiniBand group is one Uniform scale set, all Spot or all Regular: set on_demand_base 0, "
                "or put the regular nodes in a node group of their own",
            )
        elif spec.capacity == "spot" and spec.on_demand_base:
            # A terminate notification is a scale set setting and "can't be enabled for low-priority VMs"
            # (learn.microsoft.com/azure/virtual-machine-scale-sets/virtual-machine-scale-sets-terminate-notification),
            # so a priority mix's Regular base would be deleted by scale-in or repair without a checkpoint.
            yield SpecError(
                group.path("on_demand_base"),
                "a Spot scale set gets no terminate notification, so its Regular base would be removed without a "
                "checkpoint: set on_demand_base 0 and give the Regular nodes a node group of their own "
                "(capacity: on-demand), whose scale set has the notification",
            )


def admin_key_accepted(cluster: ResolvedCluster) -> Iterator[SpecError]:
    """The Compute API takes ssh-rsa of at least 2048 bits and Ed25519 only (SshPublicKey.keyData; SshEncryptionTypes
    RSA, Ed25519): anything else fails the scale set's create."""
    from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
    from cryptography.hazmat.primitives.serialization import load_ssh_public_key

    text = cluster.spec.admin_ssh_public_key
    if text is None:
        return
    try:
        key = load_ssh_public_key(" ".join(text.split()[:2]).encode())
    except (ValueError, TypeError) as error:
        yield SpecError("admin_ssh_public_key", f"not an OpenSSH public key ({error})")
        return
    if isinstance(key, rsa.RSAPublicKey) and key.key_size < RSA_KEY_MIN_BITS:
        yield SpecError("admin_ssh_public_key", f"an RSA key of {key.key_size} bits: Azure takes at least "
                        f"{RSA_KEY_MIN_BITS}")
    elif not isinstance(key, rsa.RSAPublicKey | ed25519.Ed25519PublicKey):
        yield SpecError("admin_ssh_public_key", f"a {text.split()[0]} key: Azure takes ssh-rsa (at least "
                        f"{RSA_KEY_MIN_BITS} bits) or ssh-ed25519 only")


def customer_key_settings(cluster: ResolvedCluster) -> Iterator[SpecError]:
    storage = cluster.spec.storage
    brought = storage.kms_key != "create"
    if brought and not storage.key_vault_id:
        yield SpecError("storage.key_vault_id", "a brought kms_key needs the resource id of its vault")
    if storage.key_vault_id and not brought:
        yield SpecError("storage.key_vault_id", "applies to a brought kms_key only; remove it or set kms_key")
    if storage.ephemeral_os_disk:
        yield SpecError(
            "storage.ephemeral_os_disk",
            "refused: the OS disk is encrypted with a customer-managed key, and Azure cannot rotate that key on "
            "ephemeral OS disks without deleting the VMs first; set it false",
        )


def subnet_holds_nodes(cluster: ResolvedCluster) -> Iterator[SpecError]:
    """Only networks gpufleet creates can be sized offline; a brought subnet's size is unknown here."""
    cidr = cluster.spec.network.cidr
    if cidr is None:
        return
    split = Split("a node subnet and a free half", "node subnet", NODE_SUBNET_BITS, SMALLEST_PREFIX - NODE_SUBNET_BITS,
                  int(cluster.catalog.limit("azure", "subnet_reserved_addresses")),
                  int(cluster.catalog.limits("azure").get("network_prefix_min") or 0))
    # One node subnet for every zone: every group's nodes at max size count against it.
    needed = cluster.addresses_at_max(per_zone=False)
    for problem in size_problems(split, cidr, needed, "nodes at max size"):
        yield SpecError("network.cidr", problem)


def _numbers(text: int | str) -> list[int]:
    return [int(part) for part in str(text).split(",") if part]


def lustre_size_offered(cluster: ResolvedCluster) -> Iterator[SpecError]:
    """Azure Managed Lustre: a throughput tier Azure offers, a capacity that tier sells (catalog limits, sourced),
    its own subnet carved from a VNet gpufleet creates, and one zone shared with the nodes."""
    shared, catalog = cluster.spec.storage.shared, cluster.catalog
    if shared is None:
        return
    tier = tier_of(catalog, shared.throughput_mb_per_tib)
    if tier is None:
        offered = ", ".join(map(str, tiers(catalog)))
        yield SpecError(
            "storage.shared.throughput_mb_per_tib",
            f"Azure Managed Lustre offers {offered} MB/s per TiB, got {shared.throughput_mb_per_tib}",
        )
    elif not tier.sells(shared.capacity_tib):
        yield SpecError(
            "storage.shared.capacity_tib",
            f"Azure Managed Lustre at {tier.mb_per_tib} MB/s per TiB takes {tier.describe()}, got "
            f"{shared.capacity_tib:g}",
        )
    net = cluster.spec.network
    prefixlen = subnet_prefixlen(catalog, shared.capacity_tib)
    if net.cidr is None:
        yield SpecError(
            "storage.shared",
            "Azure Managed Lustre needs a subnet of its own, which gpufleet carves from a VNet it creates: set "
            "network.cidr (a brought VNet cannot be sized offline)",
        )
    elif prefixlen is None:
        yield SpecError(
            "storage.shared.capacity_tib",
            f"Azure publishes subnet sizes for file systems up to 400 TiB; {shared.capacity_tib:g} TiB needs a subnet "
            "sized with Azure support",
        )
    elif lustre_subnet_cidr(net.cidr, prefixlen) is None:
        yield SpecError(
            "network.cidr",
            f"{net.cidr} leaves no room for the file system's /{prefixlen} subnet beside the node subnet; widen it",
        )
    if len(net.zones) != 1:
        yield SpecError(
            "network.zones",
            "Azure Managed Lustre lives in one availability zone: give network.zones the one zone the nodes and the "
            "file system share",
        )


ACTION_GROUP_ID = re.compile(
    r"^/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[-A-Za-z0-9_.()]{1,90}/providers/microsoft\.insights"
    r"/actionGroups/[-A-Za-z0-9_.]{1,260}$",
    re.IGNORECASE,
)


def alarms_fit_azure_monitor(cluster: ResolvedCluster) -> Iterator[SpecError]:
    alarms = cluster.spec.monitoring.alarms
    if alarms is None:
        return
    if cluster.alarm_target_mode == "bring" and not ACTION_GROUP_ID.match(alarms.target):
        yield SpecError(
            "monitoring.alarms.target",
            f"{alarms.target!r} is not an action group id (/subscriptions/S/resourceGroups/RG/providers/"
            "microsoft.insights/actionGroups/NAME); or set create",
        )
    windows = _numbers(cluster.catalog.limit("azure", "metric_alert_window_minutes"))
    minutes = alarms.low_utilisation.for_minutes
    if minutes not in windows:
        yield SpecError(
            "monitoring.alarms.low_utilisation.for_minutes",
            f"an Azure metric alert looks back {', '.join(map(str, windows))} minutes, got {minutes}",
        )


def idle_fits_autoscale(cluster: ResolvedCluster) -> Iterator[SpecError]:
    most = int(cluster.catalog.limit("azure", "autoscale_time_window_max_minutes"))
    for group in cluster.groups:
        idle = group.spec.idle
        if idle is not None and idle.for_minutes > most:
            yield SpecError(
                group.path("idle.for_minutes"),
                f"an Azure autoscale rule reads at most {most} minutes of a metric, got {idle.for_minutes}",
            )


def budget_notifications_fit(cluster: ResolvedCluster) -> Iterator[SpecError]:
    most = int(cluster.catalog.limit("azure", "budget_notifications_max"))
    percents = cluster.spec.budget.alert_at_percent
    if len(percents) > most:
        yield SpecError(
            "budget.alert_at_percent", f"an Azure budget holds at most {most} notifications, got {len(percents)}"
        )


def nat_egress_zone(cluster: ResolvedCluster) -> Iterator[SpecError]:
    """A created network's egress is one zonal NAT gateway (Standard SKU: "NAT gateway is a zonal resource",
    learn.microsoft.com/azure/nat-gateway/nat-availability-zones) on the one node subnet every scale set uses, so
    nodes in other zones would lose egress with that zone. The zone-redundant StandardV2 SKU that Microsoft now
    recommends is not in the installed azure-native SDK (network.NatGatewaySkuName: Standard only)."""
    net = cluster.spec.network
    if net.vnet_id is None and len(net.zones) > 1:
        yield SpecError(
            "network.zones",
            f"the created network's egress is one zonal NAT gateway, so nodes spread over zones {', '.join(net.zones)} "
            "would depend on one zone for egress: give one zone (or none: regional), or bring a subnet whose egress "
            "you built per zone (network.vnet_id and subnet_id)",
        )


CHECKS = (
    nat_egress_zone,
    infiniband_limits,
    one_size_per_scale_set,
    capacity_fits_orchestration,
    customer_key_settings,
    admin_key_accepted,
    subnet_holds_nodes,
    lustre_size_offered,
    alarms_fit_azure_monitor,
    idle_fits_autoscale,
    budget_notifications_fit,
)
