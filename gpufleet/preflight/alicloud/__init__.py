"""Alibaba Cloud preflight: read-only questions to the account (quotas, offerings, brought network, keys, roles,
images, alarm contacts, the Kubernetes API server) that the offline plan cannot answer, asked through the official
SDK V2 clients."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..concurrent import gather
from ..findings import Finding
from . import account, capacity, kubernetes, network
from .clients import AlicloudClients, Retry, make_clients

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster
    from gpufleet.prepare import Prepared
    from gpufleet.stackfile import ImagesSpec

__all__ = ["AlicloudClients", "Retry", "make_clients", "preflight"]


def preflight(prepared: Prepared, clients: AlicloudClients | None = None) -> list[Finding]:
    """Findings for an Alibaba Cloud cluster or image stack, in check order; PreflightUnavailable when the account
    cannot be asked (no or refused credentials, access denied, unknown region, no answer)."""
    from gpufleet.clouds.backend import ResolvedCluster

    if isinstance(prepared, ResolvedCluster):
        clients = clients or make_clients(prepared.spec.region)
        return gather(_cluster_checks(prepared, clients))
    clients = clients or make_clients(prepared.regions[0])
    return gather([lambda: images_stack(prepared, clients)])


def _cluster_checks(cluster: ResolvedCluster, clients: AlicloudClients) -> list[capacity.Check]:
    kind = cluster.spec.scheduler.kind
    endpoint = [lambda: kubernetes.check_endpoint(clients, cluster)] if kind == "kubernetes" else []
    return [*capacity.checks(cluster, clients), *network.checks(cluster, clients), *account.checks(cluster, clients),
            *endpoint]


def images_stack(spec: ImagesSpec, clients: AlicloudClients) -> list[Finding]:
    """The build instance type offered in the build region, and the base image the bake resolves there."""
    from gpufleet.lock import load_lock

    region = spec.regions[0]
    findings: list[Finding] = []
    build = getattr(spec, spec.BUILD_FIELD)
    zones = capacity.offers(clients, build, "NoSpot")
    if not any(status == "Available" for status, _ in zones.values()):
        findings.append(Finding(
            "alicloud-zone-offering", spec.BUILD_FIELD, True,
            f"{build} is offered pay-as-you-go with stock in no zone of {region} (DescribeAvailableResource: "
            f"{', '.join(f'{z} {s}' for z, (s, _) in sorted(zones.items())) or 'not listed'})",
            "choose a build_instance_type offered in the build region",
        ))
    for base in load_lock().base_image_entries("alicloud", region).values():  # one per boot mode
        if base.status == "resolved" and base.name_regex:
            if account.newest_system_image(base.name_regex, clients) is None:
                findings.append(Finding(
                    "alicloud-image", "regions[0]", True,
                    f"{region} has no Available system image whose name matches {base.name_regex} (images/lock.yaml "
                    "base_images), so the bake has no base image (DescribeImages, ImageOwnerAlias system)",
                    "build in a region that has it, or update name_regex in images/lock.yaml base_images",
                ))
        elif base.parent_image:
            findings += account.pinned_image("regions[0]", base.parent_image, "the base image", clients)
    return findings
