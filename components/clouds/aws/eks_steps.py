"""The Kubernetes steps of an AWS cluster with `scheduler: kubernetes`, children of the cluster: the refusal of
unpinned versions before any resource, the control plane with its access entries, first add-ons and workload roles
(before the node groups, which join it), and after the groups CoreDNS and the in-cluster layer through a Kubernetes
provider for the cluster."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.kubernetes import InCluster, InClusterArgs, refuse_unpinned
from components.kubernetes.model import SystemScaling
from components.kubernetes.placement import taint_tolerations
from gpufleet.catalog.managed_addons import resolved_eks_release
from gpufleet.lock.needs import eks_release_need

from ... import runtime
from ..scope import ClusterScope
from .eks import ControlPlane, ControlPlaneArgs, control_plane, eks_cluster_name
from .eks_access import admin_access, deployer_arn, node_access
from .eks_addons import (
    AFTER_NODES,
    BEFORE_NODES,
    cni_role,
    coredns_configuration,
    managed_addons,
    refuse_unpinned_addons,
)
from .eks_in_cluster import in_cluster_groups, kubeconfig_output, update_kubeconfig_command
from .eks_system import SystemGroupArgs, scaling_group_name, system_node_group
from .pod_identity import WorkloadScope, workload_identities


@dataclass(frozen=True)
class EksCluster:
    """The control plane and what the in-cluster layer waits for."""

    control: ControlPlane
    ready: list[pulumi.Resource]
    """The admin access and the add-ons the nodes need: the program's own API calls and the pods wait for them."""
    region: str
    system: aws.eks.NodeGroup
    """The untainted CPU nodes cluster services run on (eks_system.py): CoreDNS and the in-cluster layer wait for it."""

    def exports(self) -> dict[str, object]:
        """Stack outputs: the cluster's name, API endpoint, and the command that writes a kubeconfig for it."""
        cluster: aws.eks.Cluster = self.control.cluster
        return {
            "kubernetes_cluster": cluster.name,
            "kubernetes_endpoint": cluster.endpoint,
            "kubeconfig": cluster.name.apply(lambda name: update_kubeconfig_command(name, self.region)),
        }


def refuse_unpinned_kubernetes(scope: ClusterScope) -> None:
    """A real run stops before any resource when an add-on version or an in-cluster image is not pinned."""
    spec = scope.spec
    version = spec.scheduler.version or ""
    refuse_unpinned_addons(version)
    refuse_unread_release(version, spec.region)
    refuse_unpinned("aws", version, spec.region, in_cluster_groups(scope.resolved),
                    job_operators=tuple(spec.scheduler.job_operators))


def refuse_unread_release(minor: str, region: str) -> None:
    """Stop a real run while the system group's AMI release is unread (a preview warns; the plan names the fact)."""
    if resolved_eks_release(minor) is None:
        runtime.refuse_unread(
            f"scheduler.system_group: the EKS system group's AMI release for Kubernetes {minor} was not read, so "
            f"nothing was created: run `gpufleet lock resolve --only addons` (it reads "
            f"{eks_release_need(minor, region).parameter} in {region}) and commit images/lock.resolved.yaml, then "
            "run this again (`gpufleet plan` shows the cluster offline meanwhile)")


def eks_control_plane(scope: ClusterScope, subnet_ids: dict[str, pulumi.Output[str]], security_group_id:
                      pulumi.Output[str], key_arn: pulumi.Output[str], node_role_arn: pulumi.Output[str] | None,
                      account: pulumi.Output[str]) -> EksCluster:
    """The cluster in the private subnets, who reaches it, the add-ons before the nodes, and the workload roles."""
    spec, name, tags, child = scope.spec, scope.name, scope.tags, scope.child
    if node_role_arn is None:
        raise pulumi.RunError(
            "identity.instance_profile_arn: scheduler kubernetes gives the node role an EKS access entry (type "
            "EC2_LINUX), which names a role, not an instance profile; remove instance_profile_arn so the stack "
            "creates the node identity")
    boundary = spec.identity.permissions_boundary
    group_names = [g.names["scaling_group"] for g in scope.resolved.groups if g.spec.provisioner == "autoscaling"]
    cluster_name = eks_cluster_name(spec.name, spec.environment)
    control = control_plane(name, ControlPlaneArgs(
        cluster_name=cluster_name,
        version=spec.scheduler.version or "",
        subnet_ids=[subnet_ids[zone] for zone in spec.network.zones],
        key_arn=key_arn,
        log_retention_days=spec.monitoring.log_retention_days,
        node_security_group_id=security_group_id,
        public_cidrs=[str(c) for c in spec.scheduler.public_cidrs] if spec.scheduler.endpoint == "public" else [],
        permissions_boundary=boundary,
        protect=scope.prod,
        tags=tags,
    ), child)
    cluster = control.cluster
    admins = admin_access(name, cluster, [deployer_arn(scope.parent), *spec.scheduler.admins], tags, child)
    node_entry = node_access(name, cluster, node_role_arn, tags, child)
    role, attachment = cni_role(name, cluster_name, boundary, tags, child)
    addons = managed_addons(name, cluster, spec.scheduler.version or "", BEFORE_NODES, role.arn, tags, child,
                            after=[attachment])
    system = system_group(scope, cluster, [subnet_ids[zone] for zone in spec.network.zones], security_group_id,
                          key_arn, [*admins, node_entry, *addons])
    # The autoscaler resizes the system group too when it may grow (autoscaler.system_flag): its group by ARN.
    resized = [scaling_group_name(system)] if system_scaling(scope, system) else []
    workload_scope = pulumi.Output.all(account, *resized).apply(
        lambda found: WorkloadScope(found[0], spec.region, [*group_names, *found[1:]]))
    workload_identities(name, cluster, cluster_name, workload_scope, boundary, tags, child)
    return EksCluster(control, [*admins, node_entry, *addons], spec.region, system)


def system_group(scope: ClusterScope, cluster: aws.eks.Cluster, subnet_ids: list[pulumi.Output[str]],
                 security_group_id: pulumi.Output[str], key_arn: pulumi.Output[str],
                 after: list[pulumi.Resource]) -> aws.eks.NodeGroup:
    """The managed node group of scheduler.system_group, once the add-ons its nodes need (the VPC CNI) exist."""
    spec, system, found = scope.spec, scope.spec.scheduler.system_group, scope.resolved.system_type
    assert found is not None, "system_group_type_in_catalog refuses an unknown type"
    minor = spec.scheduler.version or ""
    return system_node_group(scope.name, SystemGroupArgs(
        cluster_name=cluster.name, version=minor, instance_type=found[0], release_version=resolved_eks_release(minor),
        min_size=system.size.min, max_size=system.size.max, subnet_ids=list(subnet_ids),
        security_group_id=security_group_id, key_arn=key_arn,
        permissions_boundary=spec.identity.permissions_boundary, tags=scope.tags,
    ), pulumi.ResourceOptions.merge(scope.child, pulumi.ResourceOptions(depends_on=after)))


def system_scaling(scope: ClusterScope, system: aws.eks.NodeGroup) -> SystemScaling | None:
    """The system group as the autoscaler resizes it, when its size.min < size.max; None when there is nothing to
    resize."""
    size = scope.spec.scheduler.system_group.size
    if size.min >= size.max:
        return None
    return SystemScaling(size.min, size.max, scaling_group_name(system))


def eks_workloads(scope: ClusterScope, eks: EksCluster, groups: Sequence[pulumi.Resource]) -> InCluster:
    """CoreDNS once the groups exist, then the in-cluster components through a provider for this cluster."""
    import pulumi_kubernetes as k8s  # loads only for a Kubernetes cluster

    spec, name, cluster = scope.spec, scope.name, eks.control.cluster
    version = spec.scheduler.version or ""
    after: list[pulumi.Resource] = [*eks.ready, eks.system, *groups]
    groups_in_cluster = in_cluster_groups(scope.resolved)
    dns = managed_addons(name, cluster, version, AFTER_NODES, None, scope.tags, scope.child, after=after,
                         configuration=coredns_configuration(taint_tolerations(groups_in_cluster)))
    join = eks.control.join
    # Every in-cluster object goes through this provider: it waits for the admin access (the program's own API
    # calls), the add-ons and the node groups, and so does each object.
    provider = k8s.Provider(f"{name}-k8s", kubeconfig=kubeconfig_output(
        join.cluster_name, join.endpoint, join.certificate_authority, spec.region),
        opts=pulumi.ResourceOptions.merge(scope.child, pulumi.ResourceOptions(depends_on=[*after, *dns])))
    args = InClusterArgs(cloud="aws", cluster_name=cluster.name, kubernetes_version=version, region=spec.region,
                         groups=groups_in_cluster, job_operators=tuple(spec.scheduler.job_operators),
                         system_scaling=system_scaling(scope, eks.system))
    return InCluster(name, args, pulumi.ResourceOptions(parent=scope.parent, provider=provider))
