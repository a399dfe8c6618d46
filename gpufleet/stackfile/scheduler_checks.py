"""Checks of `scheduler` and of the node groups' `labels` / `taints` against the cloud, the lock and each other.

Kubernetes is built on AWS (EKS) and Azure (AKS). The stack's `image` is a lock profile: on EKS a Kubernetes cluster's
nodes need a profile with a `kubernetes:` section baked for the same minor version (the kubelet on the image must
match the control plane it joins), and a VM cluster's nodes one without. An AKS agent pool takes no custom image: its
nodes run AKS's node image, and the driver container installs the driver of a VM profile (its `driver`), so AKS takes
a VM profile. The AKS-only rules (MIG through gpuInstanceProfile, Entra admins, AKS's reserved label prefix, one
priority per agent pool, what AKS nodes do not take) are in the second half of this module.

Node labels reach the node through the kubelet's own registration, so the NodeRestriction admission plugin's limits
apply (kubernetes.io/docs/reference/
access-authn-authz/admission-controllers/#noderestriction; kubernetes/kubernetes staging/src/k8s.io/kubelet/pkg/
apis/well_known_labels.go): no key in a kubernetes.io or k8s.io namespace except under kubelet.kubernetes.io/ and
node.kubernetes.io/; the well-known keys the kubelet and the cloud set themselves (hostname, zone, instance type,
os, arch) are left to them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..catalog.kubernetes_versions import load_kubernetes_versions
from ..catalog.managed_addons import load_ack_addons, load_eks_addons
from ..catalog.mig import load_mig_facts
from .check_registry import check, group_check
from .errors import SpecError

if TYPE_CHECKING:
    from ..clouds.backend import ResolvedCluster, ResolvedGroup

# Clouds whose managed Kubernetes gpufleet builds, and what the others lack.
KUBERNETES_GAPS: dict[str, str] = {}
# Zones the control plane needs: EKS takes subnets in at least two Availability Zones (EKS user guide,
# network-reqs: "at least two subnets that are in different Availability Zones").
# AKS runs its control plane itself and takes a regional cluster (network.zones: []) as well as a zonal one.
CONTROL_PLANE_ZONES = {"aws": 2, "azure": 0, "alicloud": 1}
# Clouds whose managed add-ons are pinned per Kubernetes minor (AKS runs none of gpufleet's choosing).
ADDON_CATALOGS = {"aws": load_eks_addons, "alicloud": load_ack_addons}
# Clouds whose Kubernetes nodes run the cloud's own node image, the driver pinned from a VM profile's `driver`: AKS
# (the GPU Operator's driver container) and ACK (the pool's driver-version label, ack_facts.DRIVER_LABEL).
NODE_IMAGE_DRIVER = {
    "azure": "an AKS agent pool takes no custom image, its driver is installed by the driver container at a VM "
             "profile's driver version",
    "alicloud": "an ACK node pool runs ACK's node image, its driver pinned by the pool's driver label at a VM "
                "profile's driver version",
}
NODE_IMAGE_CLOUDS = frozenset(NODE_IMAGE_DRIVER)
# Label namespaces gpufleet writes itself (the nodes' placement: zone, placement group, fabric, group).
GPUFLEET_NAMESPACE = "gpufleet.io"
# NodeRestriction: within kubernetes.io / k8s.io a kubelet may set only these namespaces (and their subdomains)...
KUBELET_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")
# ...and these keys, which the kubelet and the cloud's controller set on every node themselves.
KUBELET_SET_KEYS = frozenset({
    "kubernetes.io/hostname", "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type", "kubernetes.io/os", "kubernetes.io/arch",
    "beta.kubernetes.io/os", "beta.kubernetes.io/arch",
})
# An IAM role or user ARN, optionally with a path (IAM User Guide, reference_identifiers.html#identifiers-arns).
IAM_PRINCIPAL = re.compile(r"^arn:aws(?:-[a-z]+)*:iam::\d{12}:(?:role|user)/(?:[\w+=,.@-]+/)*[\w+=,.@-]+$")
# A RAM user or role ARN (RAM docs, "ARN of a RAM role": acs:ram::<account id>:role/<name>; users
# acs:ram::<account id>:user/<name>), what cs.KubernetesPermission grants cluster-admin to. RAM names: letters,
# digits, '.', '-', '_' (users), '.', '-' (roles), at most 64 characters.
RAM_PRINCIPAL = re.compile(r"^acs:ram::\d{16}:(?:user|role)/[A-Za-z0-9._-]{1,64}$")



@dataclass(frozen=True)
class AdminPrincipals:
    """What a cloud's cluster admins are written as: ARNs of one account's users and roles, never the root."""

    root: re.Pattern[str]
    principal: re.Pattern[str]
    names: str
    """e.g. "IAM role or user"."""
    form: str
    """The accepted forms, for the message."""


# AKS admins are Entra object ids (admins_are_entra_objects below).
ADMIN_PRINCIPALS = {
    "aws": AdminPrincipals(re.compile(r"arn:aws(?:-[a-z]+)*:iam::\d{12}:root"), IAM_PRINCIPAL, "IAM role or user",
                           "an IAM role or user ARN (arn:aws:iam::<account>:role/<name> or :user/<name>); an "
                           "assumed-role session or group cannot hold an access entry"),
    "alicloud": AdminPrincipals(re.compile(r"acs:ram::\d{16}:root"), RAM_PRINCIPAL, "RAM user or role",
                                "a RAM user or role ARN (acs:ram::<account id>:user/<name> or "
                                "acs:ram::<account id>:role/<name>)"),
}


def kubernetes_on(cluster: ResolvedCluster) -> bool:
    return bool(cluster.spec.scheduler.kind == "kubernetes")


def kubernetes_section(profile: Any) -> Any:
    """The profile's `kubernetes:` section, or None: a VM image. Read with getattr so the checks run against a lock
    model that has no Kubernetes profiles yet."""
    return getattr(profile, "kubernetes", None)


def _in_namespace(namespace: str, parent: str) -> bool:
    return namespace == parent or namespace.endswith("." + parent)


@check
def kubernetes_built_on_the_cloud(cluster: ResolvedCluster) -> Iterator[SpecError]:
    gap = KUBERNETES_GAPS.get(cluster.spec.cloud)
    if kubernetes_on(cluster) and gap:
        yield SpecError("scheduler.kind", f"{gap} ({cluster.spec.cloud}); use kind: none (VM nodes) there, or aws")


@check
def kubernetes_version_offered(cluster: ResolvedCluster) -> Iterator[SpecError]:
    cloud, version = cluster.spec.cloud, cluster.spec.scheduler.version
    if not kubernetes_on(cluster) or cloud in KUBERNETES_GAPS or version is None:
        return
    table = load_kubernetes_versions()
    if table.of(cloud, version) is None:
        yield SpecError(
            "scheduler.version",
            f"Kubernetes {version} is not offered on {cloud} per gpufleet/catalog/kubernetes_versions.yaml; use one "
            f"of: {', '.join(table.offered(cloud))}",
        )
    elif cloud in ADDON_CATALOGS:
        try:
            ADDON_CATALOGS[cloud]().for_minor(version)
        except KeyError as missing:  # the cloud's managed add-ons are pinned per minor (its components)
            yield SpecError("scheduler.version", str(missing.args[0]))


@check
def control_plane_zones(cluster: ResolvedCluster) -> Iterator[SpecError]:
    needed, zones = CONTROL_PLANE_ZONES.get(cluster.spec.cloud, 1), cluster.spec.network.zones
    if kubernetes_on(cluster) and len(set(zones)) < needed:
        yield SpecError("network.zones", f"the Kubernetes control plane needs subnets in at least {needed} zones, "
                                         f"network.zones has {len(set(zones))}: add a zone (an RDMA group stays in "
                                         "its own with node_groups[].zone)")


@check
def image_fits_the_scheduler(cluster: ResolvedCluster) -> Iterator[SpecError]:
    profile = cluster.profile
    if profile is None or kubernetes_on(cluster) and cluster.spec.cloud in KUBERNETES_GAPS or not profile.baked:
        return  # image_profile_known, kubernetes_built_on_the_cloud or ack_installed_profile_on_ack_only reports it
    section, name = kubernetes_section(profile), cluster.spec.image
    if kubernetes_on(cluster) and cluster.spec.cloud in NODE_IMAGE_CLOUDS:
        if section is not None:
            vm_profiles = sorted(p for p, entry in cluster.lock.profiles.items() if kubernetes_section(entry) is None)
            yield SpecError("image", f"profile {name!r} is a Kubernetes node image (kubernetes {section.version}): "
                                     f"{NODE_IMAGE_DRIVER[cluster.spec.cloud]}; name a VM profile: "
                                     f"{', '.join(vm_profiles)}")
        return
    if not kubernetes_on(cluster):
        if section is not None:
            yield SpecError("image", f"profile {name!r} is a Kubernetes node image (kubernetes {section.version}); a "
                                     "VM cluster (scheduler.kind none) needs a profile without a kubernetes section")
        return
    version = cluster.spec.scheduler.version
    fitting = sorted(p for p, entry in cluster.lock.profiles.items()
                     if getattr(kubernetes_section(entry), "version", None) == version)
    offer = f"; images/lock.yaml has for {version}: {', '.join(fitting)}" if fitting else (
        f"; images/lock.yaml has no Kubernetes {version} profile yet")
    if section is None:
        yield SpecError("image", f"profile {name!r} is a VM image (no kubernetes section): Kubernetes nodes need a "
                                 f"profile baked for their kubelet, like cuda12.8-r580-eks{version}{offer}")
    elif section.version != version:
        yield SpecError("image", f"profile {name!r} is baked for Kubernetes {section.version}, the control plane "
                                 f"runs scheduler.version {version}: nodes join with the same minor version{offer}")


@check
def admins_are_principals(cluster: ResolvedCluster) -> Iterator[SpecError]:
    accepted = ADMIN_PRINCIPALS.get(cluster.spec.cloud)
    if accepted is None:
        return
    for i, admin in enumerate(cluster.spec.scheduler.admins):
        path = f"scheduler.admins[{i}]"
        if "*" in admin or "?" in admin:
            yield SpecError(path, f"{admin!r} has a wildcard: name each {accepted.names} that administers the cluster")
        elif accepted.root.fullmatch(admin):
            yield SpecError(path, f"{admin!r} is the account root, which stands for every principal of the account: "
                                  f"name the {accepted.names}s that administer the cluster")
        elif not accepted.principal.fullmatch(admin):
            yield SpecError(path, f"{admin!r} is not {accepted.form}")


@group_check
def fleet_not_under_kubernetes(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    if kubernetes_on(cluster) and group.spec.provisioner == "fleet":
        through = {"azure": "their AKS agent pools (one scale set each)",
                   "alicloud": "their ACK node pools (one scaling group each)"}.get(cluster.spec.cloud,
                                                                                "their Auto Scaling groups")
        yield SpecError(group.path("provisioner"), "the Kubernetes Cluster Autoscaler scales node groups through "
                                                   f"{through}: set provisioner: autoscaling")


@group_check
def labels_and_taints_need_kubernetes(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    if kubernetes_on(cluster):
        return
    for field in ("labels", "taints"):
        if getattr(group.spec, field):
            yield SpecError(group.path(field), f"{field} are Kubernetes node {field} and need scheduler.kind: "
                                               "kubernetes; remove them from a VM cluster")


def label_key_problem(key: str) -> str | None:
    """Why a node label key cannot be set through the kubelet's registration, or None."""
    namespace = key.split("/", 1)[0] if "/" in key else ""
    if _in_namespace(namespace, GPUFLEET_NAMESPACE):
        return f"{GPUFLEET_NAMESPACE}/ labels are gpufleet's own (the nodes' placement); pick another prefix"
    if key in KUBELET_SET_KEYS:
        return "the kubelet and the cloud set this well-known label on every node themselves"
    kubernetes = _in_namespace(namespace, "kubernetes.io") or _in_namespace(namespace, "k8s.io")
    if kubernetes and not any(_in_namespace(namespace, allowed) for allowed in KUBELET_NAMESPACES):
        return ("the NodeRestriction admission plugin refuses kubernetes.io and k8s.io labels from a node except under "
                "kubelet.kubernetes.io/ and node.kubernetes.io/ (node-role.kubernetes.io/ is refused too); use "
                "your own prefix, e.g. example.com/role")
    return None


def taint_key_problem(key: str) -> str | None:
    """Why a taint key is reserved, or None."""
    namespace = key.split("/", 1)[0] if "/" in key else ""
    if _in_namespace(namespace, GPUFLEET_NAMESPACE):
        return f"{GPUFLEET_NAMESPACE}/ taints are gpufleet's own; pick another prefix"
    if _in_namespace(namespace, "kubernetes.io") or _in_namespace(namespace, "k8s.io"):
        # node.kubernetes.io/not-ready, unreachable, ...: the node lifecycle controller adds and removes these
        # (kubernetes.io/docs/reference/labels-annotations-taints).
        return "kubernetes.io and k8s.io taints belong to Kubernetes' own controllers; use your own prefix"
    return None


@group_check
def labels_and_taints_unreserved(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    if not kubernetes_on(cluster):
        return  # labels_and_taints_need_kubernetes refuses them all
    yield from key_errors(group, label_key_problem, taint_key_problem)


def key_errors(group: ResolvedGroup, label_problem: Callable[[str], str | None],
               taint_problem: Callable[[str], str | None]) -> Iterator[SpecError]:
    """Each label and taint key of the group that `label_problem` / `taint_problem` refuses, at its field. The path
    stops at `labels`: a label key's dots and slash are not field names."""
    for key in group.spec.labels:
        problem = label_problem(key)
        if problem:
            yield SpecError(group.path("labels"), f"{key!r}: {problem}")
    for j, taint in enumerate(group.spec.taints):
        problem = taint_problem(taint.key)
        if problem:
            yield SpecError(group.path(f"taints[{j}].key"), f"{taint.key!r}: {problem}")


# --- AKS ------------------------------------------------------------------------------------------------------------

# An Entra ID object id (a GUID), what AKS's Azure RBAC role assignments take as principalId.
ENTRA_OBJECT_ID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
# Label prefix AKS reserves: "The following prefixes are AKS reserved prefixes and can't be used for any node:
# kubernetes.azure.com/, kubernetes.io/" (learn.microsoft.com/azure/aks/use-labels#reserved-prefixes); AKS sets taints
# under it itself too (kubernetes.azure.com/scalesetpriority=spot:NoSchedule on Spot pools, aks/spot-node-pool).
AKS_NAMESPACE = "kubernetes.azure.com"
# gpuInstanceProfile's values (azure-native containerservice GPUInstanceProfile; AKS docs gpu-multi-instance): one
# uniform partition of every GPU of the pool into the smallest GPU instance of N slices (MIG1g on A100 40GB is
# 1g.5gb, on A100 80GB 1g.10gb).
AKS_GPU_INSTANCE_SLICES = (1, 2, 3, 4, 7)
MIG_DEVICE = re.compile(r"^(\d)g\.(\d+)gb$")


def _on_aks(cluster: ResolvedCluster) -> bool:
    return kubernetes_on(cluster) and cluster.spec.cloud == "azure"


def aks_gpu_instance_profile(profiles: dict[str, dict[str, int]], mig_profile: str) -> str | None:
    """The gpuInstanceProfile (MIG1g ... MIG7g) that makes `mig_profile` on a GPU offering `profiles` (the catalog's
    mig-parted configs -> devices), or None where AKS cannot express it: a mixed layout (all-balanced), or not the
    smallest-memory instance of its slice count (all-1g.20gb on A100 80GB is 4x 1g.20gb, MIG1g makes 7x 1g.10gb)."""
    devices = profiles.get(mig_profile)
    if not devices or len(devices) != 1:
        return None
    match = MIG_DEVICE.fullmatch(next(iter(devices)))
    if match is None or int(match[1]) not in AKS_GPU_INSTANCE_SLICES:
        return None
    slices, memory = int(match[1]), int(match[2])
    same_slices = [int(m[2]) for layout in profiles.values() if len(layout) == 1
                   for m in [MIG_DEVICE.fullmatch(next(iter(layout)))] if m and int(m[1]) == slices]
    return f"MIG{slices}g" if memory == min(same_slices) else None


@group_check
def mig_expressible_on_aks(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    sharing = group.spec.gpu_sharing
    if not _on_aks(cluster) or sharing.mode != "mig" or sharing.mig_profile is None:
        return
    facts = load_mig_facts()
    for row in group.known_types:
        gpu = facts.of(row.gpu)
        if gpu is None or not gpu.mig or gpu.devices(sharing.mig_profile) is None:
            continue  # mig_profile_offered (sharing_checks.py) reports it
        if aks_gpu_instance_profile(gpu.profiles, sharing.mig_profile) is None:
            fits = sorted(p for p in gpu.profiles if aks_gpu_instance_profile(gpu.profiles, p))
            yield SpecError(group.path("gpu_sharing.mig_profile"),
                            f"{sharing.mig_profile} cannot be made by an AKS agent pool: its gpuInstanceProfile "
                            "(MIG1g|MIG2g|MIG3g|MIG4g|MIG7g) partitions every GPU into one size of instance, the "
                            f"smallest of its slice count; on {row.name} use one of: {', '.join(fits)}")
            return


@check
def admins_are_entra_objects(cluster: ResolvedCluster) -> Iterator[SpecError]:
    if not _on_aks(cluster):
        return
    for i, admin in enumerate(cluster.spec.scheduler.admins):
        if not ENTRA_OBJECT_ID.fullmatch(admin):
            yield SpecError(f"scheduler.admins[{i}]", f"{admin!r} is not an Entra ID object id (a GUID like "
                                                      "00000000-0000-0000-0000-000000000000): name each user, group "
                                                      "or service principal that administers the cluster by its "
                                                      "object id (az ad user show --id <upn> --query id)")


@group_check
def aks_prefix_unreserved(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    if not _on_aks(cluster):
        return
    def reserved(key: str) -> bool:
        return "/" in key and _in_namespace(key.split("/", 1)[0], AKS_NAMESPACE)
    yield from key_errors(
        group,
        lambda key: f"{AKS_NAMESPACE}/ is a prefix AKS reserves for its own node labels; use your own prefix, e.g. "
                    "example.com/role" if reserved(key) else None,
        lambda key: f"AKS sets {AKS_NAMESPACE}/ taints itself (the Spot pools' scalesetpriority); use your own prefix"
                    if reserved(key) else None,
    )


@group_check
def one_priority_per_agent_pool(cluster: ResolvedCluster, group: ResolvedGroup) -> Iterator[SpecError]:
    """An agent pool has one scaleSetPriority (Regular or Spot), so a Regular base under Spot is two node groups.
    (capacity_offered refuses mixed on Azure in general; spot with on_demand_base is refused by the Azure checks.)"""
    if not _on_aks(cluster):
        return
    if group.spec.capacity == "mixed":
        yield SpecError(group.path("capacity"), "an AKS agent pool runs one priority, Regular or Spot: give the "
                                                "on-demand base a node group of its own (capacity: on-demand, size "
                                                "on_demand_base) and the Spot nodes another (capacity: spot)")
    elif group.spec.capacity == "reservation":
        # gpufleet's agent pools draw on no capacity reservation group (components/clouds/azure, the AKS pools).
        yield SpecError(group.path("capacity"), "capacity reservations are not built for AKS agent pools: use "
                                                "on-demand or spot")


@check
def shared_storage_not_on_aks(cluster: ResolvedCluster) -> Iterator[SpecError]:
    if _on_aks(cluster) and cluster.spec.storage.shared is not None:
        yield SpecError("storage.shared", "AKS nodes do not mount the Azure Managed Lustre file system (its CSI driver "
                                          "is not built): remove storage.shared from a Kubernetes stack")


@check
def idle_is_one_autoscaler_setting_on_aks(cluster: ResolvedCluster) -> Iterator[SpecError]:
    """On AKS a group's idle.for_minutes is the cluster autoscaler's scale-down-unneeded-time
    (components/clouds/azure/aks_autoscaler.py), which the cluster's autoscaler profile sets once for every pool."""
    if not _on_aks(cluster):
        return
    idle = [(group.spec.name, group.path("idle.for_minutes"), group.spec.idle.for_minutes)
            for group in cluster.groups if group.spec.idle is not None]
    for _, path, minutes in idle[1:]:
        first, _, first_minutes = idle[0]
        if minutes != first_minutes:
            yield SpecError(path, f"{minutes}: on AKS idle.for_minutes is the cluster autoscaler's "
                                  f"scale-down-unneeded-time, one value for every pool; {first} sets {first_minutes}: "
                                  "give every group the same")
