"""The cluster autoscaler's settings of an AKS cluster (ManagedCluster autoScalerProfile): how GPU pools scale in.

AKS runs the autoscaler itself and takes one profile for every pool (learn.microsoft.com/azure/aks/cluster-autoscaler,
"Use the cluster autoscaler profile": it "affects all node pools that use the cluster autoscaler", none per pool); the
input names and defaults are azure-native's ManagedClusterPropertiesAutoScalerProfileArgs (values are strings: '10m',
'true'; expander one of least-waste, most-pods, priority, random).

A group's idle.for_minutes is scale-down-unneeded-time: how long a node stays unneeded before it goes, the one idle
setting the profile can carry (the stack checks refuse groups that differ:
gpufleet/stackfile/scheduler_checks.py idle_is_one_autoscaler_setting_on_aks). idle.gpu_util_below has no AKS
equivalent: the autoscaler judges a GPU node by the GPUs its pods request, against its GPU threshold
(kubernetes/autoscaler cluster-autoscaler/core/scaledown/eligibility/eligibility.go: nodes with a GPU use
ScaleDownGpuUtilizationThreshold, others ScaleDownUtilizationThreshold), and AKS's profile sets only the latter;
the plan warns so (gpufleet/plan/support_warnings.py).
"""

from __future__ import annotations

from pulumi_azure_native import containerservice

from gpufleet.clouds.backend import ResolvedCluster

# The autoscaler's default (the SDK's description of scale_down_unneeded_time: "The default is '10m'").
DEFAULT_UNNEEDED_MINUTES = 10
# least-waste: of the pools a pending pod fits, the one leaving the least CPU and memory idle after scale-up; GPU pools
# differ by VM size, and a pod that fits a smaller size should not start a larger one (kubernetes/autoscaler
# cluster-autoscaler FAQ.md, "What are Expanders?"). AKS's default is random.
EXPANDER = "least-waste"


def unneeded_minutes(resolved: ResolvedCluster) -> int:
    """The groups' idle.for_minutes (one value: the stack checks refuse two), else the autoscaler's default."""
    minutes = {group.spec.idle.for_minutes for group in resolved.groups if group.spec.idle is not None}
    return minutes.pop() if minutes else DEFAULT_UNNEEDED_MINUTES


def autoscaler_profile(unneeded: int) -> containerservice.ManagedClusterPropertiesAutoScalerProfileArgs:
    """The profile for GPU pools: scale-in after `unneeded` minutes without work; nodes whose pods hold emptyDir
    scratch (NCCL's /dev/shm, a job's checkpoints on the NVMe) removable like any other (the default, true, keeps
    any node such a pod runs on, however idle); least-waste scale-up. A job that must not be moved says so with the
    cluster-autoscaler.kubernetes.io/safe-to-evict: "false" annotation (FAQ.md, "What types of pods can prevent CA
    from removing a node?")."""
    return containerservice.ManagedClusterPropertiesAutoScalerProfileArgs(
        scale_down_unneeded_time=f"{unneeded}m",
        skip_nodes_with_local_storage="false",
        expander=EXPANDER,
    )
