"""The Azure entry point: which checks a prepared stack needs, run side by side."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..concurrent import Check, gather
from ..findings import Finding
from ..key_accounts import key_account_findings
from .account import cluster_account_checks, images_account_checks
from .brought import brought_checks
from .clients import AzureClients, Memo, default_clients
from .compute import Compute, Placement, offering_checks, quota_check
from .images import cluster_image_checks, images_stack_checks
from .kubernetes import aks_checks
from .network import network_checks

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster
    from gpufleet.prepare import Prepared
    from gpufleet.stackfile import ImagesSpec


def preflight(prepared: Prepared, clients: AzureClients | None = None) -> list[Finding]:
    """Findings of every check, in a stable order; PreflightUnavailable when Azure cannot be asked."""
    from gpufleet.clouds.backend import ResolvedCluster

    clients = clients or default_clients()
    compute = Compute(clients, Memo())
    if isinstance(prepared, ResolvedCluster):
        checks = _cluster_checks(clients, compute, prepared)
    else:
        checks = _images_checks(clients, compute, prepared)
    subscription = clients.subscription_id

    def accounts() -> list[Finding]:
        return key_account_findings("azure", prepared, subscription, "the subscription its clients read")

    return gather([*checks, accounts])


def placements(cluster: ResolvedCluster) -> list[Placement]:
    """Each node group at size.max, in its zones; a Slurm cluster's head node, one VM in its zone."""
    found = []
    for group in cluster.groups:
        spec = group.spec
        found.append(Placement(
            size=spec.instance_types[0],
            count=spec.size.max,
            spot=spec.spot,
            zones=group.zones,
            size_field=group.path("instance_types[0]"),
            count_field=group.path("size.max"),
            zone_field=group.path("zone") if spec.zone else "network.zones",
            capacity_field=group.path("capacity"),
            rdma_field=group.path("rdma") if group.rdma else None,
            label=f"node group {group.name}",
        ))
    if (head := cluster.head_node_type) is not None:
        zone, written = cluster.head_node_zone, cluster.spec.scheduler.head_node
        found.append(Placement(
            size=head[0], count=1, spot=False, zones=(zone,) if zone else (),
            size_field="scheduler.head_node.instance_type", count_field="scheduler.head_node.instance_type",
            zone_field="scheduler.head_node.zone" if written and written.zone else "network.zones",
            capacity_field="scheduler.head_node.instance_type", rdma_field=None, label="the Slurm head node",
        ))
    return found


def _cluster_checks(clients: AzureClients, compute: Compute, cluster: ResolvedCluster) -> list[Check]:
    region, wanted = cluster.spec.region, placements(cluster)
    return [
        *cluster_account_checks(clients, cluster),
        *aks_checks(clients, cluster),
        *offering_checks(compute, region, wanted, cluster.spec.storage.encryption_at_host),
        quota_check(compute, region, wanted),
        *network_checks(clients, cluster),
        *brought_checks(clients, cluster),
        *cluster_image_checks(clients, cluster),
    ]


def _images_checks(clients: AzureClients, compute: Compute, spec: ImagesSpec) -> list[Check]:
    region = spec.regions[0]
    build = [Placement(size=spec.build_vm_size, count=1, spot=False, zones=(), size_field="build_vm_size",  # type: ignore[attr-defined]
                       count_field="build_vm_size", zone_field="regions[0]", capacity_field="build_vm_size",
                       rdma_field=None, label="the build VM")]
    return [
        *images_account_checks(clients, spec),
        *offering_checks(compute, region, build, False),
        quota_check(compute, region, build),
        *images_stack_checks(clients, spec),
    ]
