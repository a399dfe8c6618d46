"""What the in-cluster layer (components/kubernetes) is told about an ACK cluster: its node pools as InClusterGroups,
and the kubeconfig its Kubernetes provider reaches the API server with.

The kubeconfig comes from cs.get_cluster_credential (DescribeClusterUserKubeconfig; pulumi-alicloud 4.0.0 recommends it
over the removed kube_config attribute, aliyun/terraform-provider-alicloud @81c43b6
alicloud/data_source_alicloud_cs_cluster_credential.go): a client certificate for the identity that runs `pulumi up`,
valid for temporary_duration_minutes, so the one in the state expires. Operators write theirs with `aliyun cs GET
/k8s/<cluster id>/user_config` (the DescribeClusterUserKubeconfig ROA path; ALI ack "Obtain the kubeconfig file of a
cluster").
"""

from __future__ import annotations

import pulumi

from components.bootstrap.for_group import node_check_expectations
from components.kubernetes import InClusterGroup
from components.kubernetes.pool_nodes import gpus_per_node
from gpufleet.catalog.ack import load_ack_facts
from gpufleet.clouds.backend import ResolvedCluster, ResolvedGroup

from ... import runtime
from .ack_pools import pool_fabric, pool_labels, pool_taints

# The client certificate's lifetime (data_source_alicloud_cs_cluster_credential.go:22-25, :100-102; the provider
# checks no range): long enough for one `pulumi up`, renewed by each.
CREDENTIAL_MINUTES = 240


def in_cluster_group(group: ResolvedGroup, driver: str | None) -> InClusterGroup:
    spec = group.spec
    return InClusterGroup(
        name=spec.name,
        fabric=pool_fabric(group),
        instance_types=tuple(spec.instance_types),
        gpus_per_node=gpus_per_node(group),
        min_size=spec.size.min,
        max_size=spec.size.max,
        scaling_group_name=group.names["scaling_group"],
        labels=pool_labels(group, driver or ""),
        taints=pool_taints(group),
        spot=spec.spot,
        **spec.gpu_sharing.in_cluster_fields(),  # type: ignore[arg-type]
    )


def in_cluster_groups(resolved: ResolvedCluster) -> tuple[InClusterGroup, ...]:
    driver = resolved.profile.driver if resolved.profile else None
    return tuple(in_cluster_group(group, driver) for group in resolved.groups)


def refuse_unlisted_driver(resolved: ResolvedCluster) -> None:
    """A real run stops before any resource while ACK's documented driver list does not name the profile's driver:
    the pools' driver label would get ACK's default driver, not the lock's (the plan warns instead)."""
    driver = resolved.profile.driver if resolved.profile else None
    unlisted = load_ack_facts().unlisted_driver(driver) if driver else None
    if unlisted:
        runtime.refuse("image", unlisted)


def refuse_unpinned_kubernetes(resolved: ResolvedCluster) -> None:
    """A real run stops before any resource while an in-cluster image or an ACK add-on is not pinned."""
    from components.kubernetes import refuse_unpinned

    from .ack_addons import refuse_unpinned_addons

    refuse_unpinned_addons(resolved)
    refuse_unlisted_driver(resolved)
    refuse_unpinned("alicloud", resolved.spec.scheduler.version or "", resolved.spec.region,
                    in_cluster_groups(resolved), None, node_check_expectations(resolved),
                    tuple(resolved.spec.scheduler.job_operators))


def kubeconfig_output(cluster_id: pulumi.Input[str], opts: pulumi.InvokeOutputOptions) -> pulumi.Output[str]:
    """The deployer's kubeconfig for the cluster (a secret: it holds a client key)."""
    import pulumi_alicloud as alicloud

    credential = alicloud.cs.get_cluster_credential_output(
        cluster_id=cluster_id, temporary_duration_minutes=CREDENTIAL_MINUTES, opts=opts)
    return pulumi.Output.secret(credential.kube_config)


def credentials_command(cluster_id: str) -> str:
    """The command that prints this cluster's kubeconfig on an operator's machine."""
    return f"aliyun cs GET /k8s/{cluster_id}/user_config | jq -r .config > ~/.kube/config"
