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
from components.kubernetes import NODE_CHECK_TAINT, InClusterGroup
from gpufleet.clouds.alicloud.ack_facts import DRIVER_LABEL, SCHEDULE_LABEL, SHARING_SCHEDULE
from gpufleet.resolve import ResolvedCluster, ResolvedGroup

GROUP_LABEL = "gpufleet.io/group"
FABRIC_LABEL = "gpufleet.io/fabric"
GPU_TAINT = ("nvidia.com/gpu", "present", "NoSchedule")
# The client certificate's lifetime (data_source_alicloud_cs_cluster_credential.go:22-25, :100-102; the provider
# checks no range): long enough for one `pulumi up`, renewed by each.
CREDENTIAL_MINUTES = 240


def fabric(group: ResolvedGroup) -> str:
    return "erdma" if group.rdma else "none"


def group_labels(group: ResolvedGroup, driver: str | None) -> dict[str, str]:
    """The labels a group's pool gives its nodes: the stack's, gpufleet's, the lock's driver pin and the sharing
    schedule ack-ai-installer reads (ack_facts)."""
    mode = group.spec.gpu_sharing.mode
    labels = {GROUP_LABEL: group.spec.name, FABRIC_LABEL: fabric(group),
              **({DRIVER_LABEL: driver} if driver else {}),
              **({SCHEDULE_LABEL: SHARING_SCHEDULE[mode]} if mode in SHARING_SCHEDULE else {})}
    clash = sorted(set(labels) & set(group.spec.labels))
    if clash:
        raise ValueError(f"{group.path('labels')}: {', '.join(clash)} are set by gpufleet; remove them")
    return {**group.spec.labels, **labels}


def group_taints(group: ResolvedGroup) -> tuple[tuple[str, str, str], ...]:
    """The stack's taints, the GPU taint unless the stack sets nvidia.com/gpu itself, and the node check's startup
    taint, which the node-check DaemonSet lifts once the node passes."""
    taints = tuple((t.key, t.value, t.effect) for t in group.spec.taints)
    gpu = () if any(key == GPU_TAINT[0] for key, _, _ in taints) else (GPU_TAINT,)
    return (*taints, *gpu, NODE_CHECK_TAINT)


def in_cluster_group(group: ResolvedGroup, driver: str | None) -> InClusterGroup:
    spec = group.spec
    return InClusterGroup(
        name=spec.name,
        fabric=fabric(group),
        instance_types=tuple(spec.instance_types),
        gpus_per_node=group.primary.gpu.count,
        min_size=spec.size.min,
        max_size=spec.size.max,
        scaling_group_name=group.names["scaling_group"],
        labels=group_labels(group, driver),
        taints=group_taints(group),
        spot=spec.capacity in ("spot", "mixed"),
        **spec.gpu_sharing.in_cluster_fields(),  # type: ignore[arg-type]
    )


def in_cluster_groups(resolved: ResolvedCluster) -> tuple[InClusterGroup, ...]:
    driver = resolved.profile.driver if resolved.profile else None
    return tuple(in_cluster_group(group, driver) for group in resolved.groups)


def refuse_unpinned_kubernetes(resolved: ResolvedCluster) -> None:
    """A real run stops before any resource while an in-cluster image or an ACK add-on is not pinned."""
    from components.kubernetes import refuse_unpinned

    from .ack_addons import refuse_unpinned_addons

    refuse_unpinned_addons(resolved)
    refuse_unpinned("alicloud", resolved.spec.scheduler.version or "", resolved.spec.region,
                    in_cluster_groups(resolved), None, node_check_expectations(resolved))


def kubeconfig_output(cluster_id: pulumi.Input[str], opts: pulumi.InvokeOutputOptions) -> pulumi.Output[str]:
    """The deployer's kubeconfig for the cluster (a secret: it holds a client key)."""
    import pulumi_alicloud as alicloud

    credential = alicloud.cs.get_cluster_credential_output(
        cluster_id=cluster_id, temporary_duration_minutes=CREDENTIAL_MINUTES, opts=opts)
    return pulumi.Output.secret(credential.kube_config)


def credentials_command(cluster_id: str) -> str:
    """The command that prints this cluster's kubeconfig on an operator's machine."""
    return f"aliyun cs GET /k8s/{cluster_id}/user_config | jq -r .config > ~/.kube/config"
