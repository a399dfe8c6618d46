"""Checks of what a Kubernetes cluster's scheduler implies beyond its node groups: the system group
(scheduler.system_group: a type the catalog knows, a name no node group takes) and the defaults derived from the
scheduler (scheduler.derive_defaults), where only a value the stack wrote can be refused."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from .check_registry import check, group_check
from .errors import SpecError
from .scheduler import CLOUD_IMAGE_NODES, SYSTEM_GROUP_NAME
from .scheduler_checks import kubernetes_on

if TYPE_CHECKING:
    from ..clouds.backend import ResolvedCluster, ResolvedGroup


@check
def system_group_type_in_catalog(cluster: ResolvedCluster) -> Iterator[SpecError]:
    """The system group runs a CPU type the catalog knows for the cloud (its facts, and its price where published)."""
    if not kubernetes_on(cluster):
        return
    cloud, name = cluster.spec.cloud, cluster.spec.scheduler.system_group.instance_type
    if cluster.catalog.system_type(cloud, name) is None:
        offered = ", ".join(cluster.catalog.system_type_names(cloud)) or "none yet"
        yield SpecError("scheduler.system_group.instance_type",
                        f"{name or 'the default'} is not a system type of {cloud} in gpufleet/catalog/data/"
                        f"{cloud}.yaml (system_types: {offered}); name one of them, or add a row with its source")


@group_check
def system_name_reserved(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    if kubernetes_on(cluster) and group.spec.name == SYSTEM_GROUP_NAME:
        yield SpecError(group.path("name"), f"{SYSTEM_GROUP_NAME!r} is the system group's name "
                                            "(scheduler.system_group, the untainted CPU nodes cluster services run "
                                            "on): name the GPU group after its role or type, e.g. h100")


@check
def no_scratch_raid_on_cloud_image_nodes(cluster: ResolvedCluster) -> Iterator[SpecError]:
    service = CLOUD_IMAGE_NODES.get(cluster.spec.cloud)
    storage = cluster.spec.storage
    if kubernetes_on(cluster) and service and storage.scratch == "raid0":
        # The node-check DaemonSet would expect the mount (expect.json scratch_mount) and never release the node.
        # Only a written raid0 reaches here: an unwritten scratch is none under Kubernetes (scheduler.derive_defaults).
        yield SpecError("storage.scratch", f"{service} nodes run {service}'s own image and no gpufleet bootstrap, so "
                                           f"nothing stripes their local NVMe at {storage.scratch_mount}: set "
                                           "storage.scratch: none (or leave it out)")
