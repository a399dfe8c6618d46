"""The Kubernetes steps of an Alibaba Cloud cluster with `scheduler: kubernetes`, children of the cluster: the ACK Pro
control plane (ack.py) with its add-ons (ack_addons.py) and RRSA roles (ack_rrsa.py), its admins, one node pool per
node group (ack_pools.py) in place of the scaling groups, and the in-cluster layer through a Kubernetes provider for
the cluster (ack_in_cluster.py).

Admins: cs.KubernetesPermission grants ACK's predefined `admin` role on this cluster (role_type cluster) to a RAM
user id, or a RAM role id with is_ram_role (pulumi-alicloud 4.0.0 cs.KubernetesPermission text). The resource patches
that principal's permissions on this cluster only and removes them on delete (aliyun/terraform-provider-alicloud
@81c43b6 alicloud/resource_alicloud_cs_kubernetes_permissions.go:88, :178: UpdateUserPermissions mode patch /
delete). Ids come from the RAM data sources by the ARN's name (ram.get_users / ram.get_roles name_regex). The identity
that runs `pulumi up` gets the same grant, since its provider creates the in-cluster objects (as on EKS and AKS).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pulumi
import pulumi_alicloud as alicloud

from components.kubernetes import InCluster, InClusterArgs
from gpufleet.catalog.managed_addons import resolved_kubernetes_version
from gpufleet.clouds.alicloud.names import NAMES, PROJECT, SLB_ACL, ack_cluster_name
from gpufleet.clouds.naming import fit

from ...bootstrap.for_group import node_check_expectations
from ..scope import ClusterScope
from .ack import AckArgs, managed_cluster, service_cidr
from .ack_addons import cluster_addons, create_addons, erdma_in_use
from .ack_in_cluster import credentials_command, in_cluster_groups, kubeconfig_output
from .ack_rrsa import ERDMA_CONTROLLER, rrsa_role
from .api_server_acl import limit_api_server, whitelist_entries

# acs:ram::<account id>:user/<name> | role/<name> (scheduler.admins); assumed-role/<role>/<session> (a deployer that
# runs as a role).
RAM_ARN = re.compile(r"^acs:ram::(?P<account>\d+):(?P<kind>user|role|assumed-role)/(?P<name>[^/]+)(/.*)?$")
ADMIN_ROLE = "admin"

def ram_principal(arn: str) -> tuple[bool, str] | None:
    """(is a role, name) of a RAM user or role ARN; None for anything else (the account's root identity)."""
    match = RAM_ARN.match(arn)
    if match is None:
        return None
    return match["kind"] != "user", match["name"]


def principal_uid(arn: str, opts: pulumi.InvokeOutputOptions) -> pulumi.Output[str]:
    """The RAM user or role id KubernetesPermission takes, looked up by the ARN's name."""
    principal = ram_principal(arn)
    if principal is None:
        raise pulumi.RunError(f"{arn}: ACK grants cluster roles to RAM users and roles only; run `pulumi up` as a RAM "
                              "user or role, not the account's root identity")
    is_role, name = principal
    pattern = f"^{re.escape(name)}$"
    if is_role:
        return alicloud.ram.get_roles_output(name_regex=pattern, opts=opts).roles.apply(lambda rows: rows[0].id)
    return alicloud.ram.get_users_output(name_regex=pattern, opts=opts).users.apply(lambda rows: rows[0].id)


@dataclass(frozen=True)
class AckCluster:
    """The control plane, its admins, add-ons and RRSA roles."""

    cluster: alicloud.cs.ManagedKubernetes
    admins: list[alicloud.cs.KubernetesPermission]
    addons: list[alicloud.cs.KubernetesAddon]
    api_whitelist: pulumi.Resource | None
    """scheduler.endpoint public: the ACL binding that limits the API server to named ranges (api_server_acl.py)."""

    def exports(self) -> dict[str, object]:
        """Stack outputs: the cluster's name and id, and the command that writes a kubeconfig for it."""
        return {
            "kubernetes_cluster": self.cluster.name,
            "kubernetes_cluster_id": self.cluster.id,
            "kubeconfig": self.cluster.id.apply(credentials_command),
        }


def ack_control_plane(scope: ClusterScope, vswitch_ids: dict[str, pulumi.Output[str]],
                      security_group_id: pulumi.Output[str], key_id: pulumi.Output[str],
                      account: pulumi.Output[str], deployer_arn: pulumi.Output[str]) -> AckCluster:
    """The cluster on the stack's vSwitches, node security group and key; its admins, RRSA roles and add-ons."""
    spec, name = scope.spec, scope.name
    project = alicloud.log.Project(
        f"{name}-k8s-logs",
        # Unique in the region over every account, like the interruption events' project (interruptions.py); the
        # environment in it keeps dev and prod apart. A renamed project reaches a running cluster in place
        # (UpdateControlPlaneLog: resource_alicloud_cs_managed_kubernetes.go @81c43b6 :1475-1476, :1682-1684).
        project_name=account.apply(
            lambda acct: fit(f"{scope.base}-k8s-logs", NAMES.limit(PROJECT, "projectName"), spec.region, acct)),
        description="gpufleet ACK control-plane logs", tags=scope.tags, opts=scope.child)
    cluster = managed_cluster(name, AckArgs(
        cluster_name=ack_cluster_name(spec.name, spec.environment, spec.region),
        # ACK stores the full version it created (1.36.x-aliyun.n): the one `lock resolve` read, else the minor (a
        # real run refuses that: refuse_unpinned_addons).
        version=resolved_kubernetes_version("ack", spec.scheduler.version or "") or spec.scheduler.version or "",
        vswitch_ids=[vswitch_ids[zone] for zone in spec.network.zones],
        security_group_id=security_group_id,
        key_id=key_id,
        service_cidr=service_cidr(spec.network.cidr),
        log_project=project.project_name,
        log_ttl_days=spec.monitoring.log_retention_days,
        addons=create_addons(spec.scheduler.version or ""),
        public_endpoint=spec.scheduler.endpoint == "public",
        protect=scope.prod,
        tags=scope.tags,
    ), scope.child)
    whitelist = api_whitelist(scope, cluster)
    admins = cluster_admins(scope, cluster, deployer_arn)
    erdma_role = rrsa_role(name, ERDMA_CONTROLLER, cluster, scope.tags, scope.child) \
        if erdma_in_use(scope.resolved) else None
    addons = cluster_addons(name, scope.resolved, cluster.id, erdma_role, scope.child)
    return AckCluster(cluster, admins, addons, whitelist)


def api_whitelist(scope: ClusterScope, cluster: alicloud.cs.ManagedKubernetes) -> pulumi.Resource | None:
    """A public endpoint's whitelist: ACK's control plane, the stack's VPC and scheduler.public_cidrs (a brought
    network is refused a public endpoint: ack_checks.public_endpoint_needs_the_vpc_range)."""
    spec = scope.spec
    if spec.scheduler.endpoint != "public":
        return None
    assert spec.network.cidr is not None, "ack_checks refuses a public endpoint on a brought network"
    entries = whitelist_entries(str(spec.network.cidr), [str(cidr) for cidr in spec.scheduler.public_cidrs])
    acl_name = fit(f"gpufleet-{scope.base}-api", NAMES.limit(SLB_ACL, "name"), spec.region)
    return limit_api_server(scope.name, acl_name, cluster, entries, spec.region, scope.tags, scope.child)


def cluster_admins(scope: ClusterScope, cluster: alicloud.cs.ManagedKubernetes, deployer_arn: pulumi.Output[str]
                   ) -> list[alicloud.cs.KubernetesPermission]:
    """ACK's admin role on this cluster for the deployer and each of scheduler.admins."""
    invoke = pulumi.InvokeOutputOptions(parent=scope.parent)
    principals: list[tuple[pulumi.Input[str], pulumi.Input[bool]]] = [(
        deployer_arn.apply(lambda arn: principal_uid(arn, invoke)),
        deployer_arn.apply(lambda arn: bool(ram_principal(arn) and ram_principal(arn)[0])),  # type: ignore[index]
    )]
    for admin in scope.spec.scheduler.admins:
        principal = ram_principal(admin)
        assert principal is not None, "the ACK stack checks accept RAM user and role ARNs only"
        principals.append((principal_uid(admin, invoke), principal[0]))
    return [
        alicloud.cs.KubernetesPermission(
            f"{scope.name}-ack-admin-{i}",
            uid=uid,
            permissions=[alicloud.cs.KubernetesPermissionPermissionArgs(
                cluster=cluster.id, role_type="cluster", role_name=ADMIN_ROLE, is_ram_role=is_role)],
            opts=scope.child,
        )
        for i, (uid, is_role) in enumerate(principals)
    ]


def ack_node_pools(scope: ClusterScope, kubernetes: AckCluster, vswitch_ids: dict[str, pulumi.Output[str]],
                   security_group_id: pulumi.Output[str], key_id: pulumi.Output[str],
                   contact: pulumi.Input[str] | None) -> tuple[dict[str, pulumi.Resource], pulumi.Resource]:
    """One node pool per node group, on the cluster's vSwitches, node security group and key (ack_pools.py), and
    its GPU alerts once the ARMS add-on runs (ack_alerts.py); and the system group's pool (ack_system.py)."""
    from .ack_alerts import pool_alerts
    from .ack_pools import AckPoolArgs, ack_pools
    from .ack_system import system_pool

    args = AckPoolArgs(cluster_id=kubernetes.cluster.id, vswitch_ids=vswitch_ids,
                       security_group_id=security_group_id, key_id=key_id, contact_group=contact)
    pools = dict(ack_pools(scope, args))
    pool_alerts(scope, kubernetes.cluster.id, pools, contact, after=list(kubernetes.addons))
    return pools, system_pool(scope, args)


def ack_workloads(scope: ClusterScope, kubernetes: AckCluster, pools: list[pulumi.Resource]) -> InCluster:
    """The in-cluster components through a provider for this cluster, once the pools, add-ons and admins exist.
    driver None: ACK's node image carries the driver its pool label pins (ack_facts.DRIVER_LABEL)."""
    import pulumi_kubernetes as k8s  # loads only for a Kubernetes cluster

    spec, name, cluster = scope.spec, scope.name, kubernetes.cluster
    after: list[pulumi.Resource] = [*kubernetes.admins, *kubernetes.addons, *pools,
                                    *([kubernetes.api_whitelist] if kubernetes.api_whitelist else [])]
    kubeconfig = kubeconfig_output(cluster.id, pulumi.InvokeOutputOptions(
        parent=scope.parent, depends_on=[cluster, *kubernetes.admins]))
    provider = k8s.Provider(f"{name}-k8s", kubeconfig=kubeconfig,
                            opts=pulumi.ResourceOptions.merge(scope.child, pulumi.ResourceOptions(depends_on=after)))
    args = InClusterArgs(cloud="alicloud", cluster_name=cluster.name, kubernetes_version=spec.scheduler.version or "",
                         region=spec.region, groups=in_cluster_groups(scope.resolved), driver=None,
                         node_check=node_check_expectations(scope.resolved),
                         job_operators=tuple(spec.scheduler.job_operators))
    return InCluster(name, args, pulumi.ResourceOptions(parent=scope.parent, provider=provider))
