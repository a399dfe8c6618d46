"""Each cloud's registered node groups read off the plan: EKS scaling groups (their launch template's kubelet
flags) and managed node groups, AKS agent pools (the cluster's own profiles and AgentPool resources), ACK node pools."""

from __future__ import annotations

import base64
import gzip
import shlex
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import yaml

from components.kubernetes.alicloud import ERDMA_RESOURCE
from components.kubernetes.network_operator import HCA_MAX
from components.kubernetes.network_operator import RESOURCE as IB_RESOURCE
from components.kubernetes.node_check import NODE_CHECK_LABEL

from ...clouds.backend import ResolvedCluster
from ...yaml_libyaml import SAFE_LOADER
from ..record import RecordedResource
from .nodes import gpu_allocatable, parsed_resources, templates
from .semantics import NodeTemplate, Taint

GROUP_LABEL = "gpufleet.io/group"
# The tags Cluster Autoscaler reads a scaling group's node template from (kubernetes/autoscaler cluster-autoscaler/
# cloudprovider/aws/README.md, "Auto-Discovery Setup"): what one node advertises, as the stack tags its groups.
TEMPLATE_RESOURCES = "k8s.io/cluster-autoscaler/node-template/resources/"
# eks-join.sh adds node.kubernetes.io/lifecycle (spot | on-demand, from IMDS instance-life-cycle) to the labels.
LIFECYCLE_LABEL = "node.kubernetes.io/lifecycle"
# EKS managed node groups label their nodes (EKS user guide, managed-node-groups: "Amazon EKS adds ... labels").
EKS_NODEGROUP_LABEL, EKS_CAPACITY_LABEL = "eks.amazonaws.com/nodegroup", "eks.amazonaws.com/capacityType"
# The EKS API spells effects NO_SCHEDULE, NO_EXECUTE, PREFER_NO_SCHEDULE (EKS API reference, Taint).
EKS_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
# AKS labels every node with its pool and mode, and taints Spot pools' nodes (azure-aks-docs articles/aks
# use-system-pools.md, spot-node-pool.md: kubernetes.azure.com/scalesetpriority=spot:NoSchedule).
AKS_POOL_LABEL, AKS_MODE_LABEL = "kubernetes.azure.com/agentpool", "kubernetes.azure.com/mode"
AKS_SPOT = Taint("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule")


class PoolReadError(ValueError):
    """A registered pool this reader cannot make nodes of; the message names the resource."""


def _taint_text(text: str) -> Taint:
    """key=value:Effect or key:Effect (kubelet --register-with-taints, AKS nodeTaints)."""
    body, _, effect = text.rpartition(":")
    key, _, value = body.partition("=")
    return Taint(key, value, effect)


def _kubelet_settings(launch: RecordedResource) -> dict[str, str]:
    """GPUFLEET_EKS_* of /etc/gpufleet/eks.env in a launch template's (base64, gzipped) cloud-config."""
    try:
        text = gzip.decompress(base64.b64decode(launch.inputs["userData"])).decode()
        document = yaml.load(text, Loader=SAFE_LOADER)
        files = document.get("write_files") or []
    except (KeyError, TypeError, ValueError, OSError, AttributeError, yaml.YAMLError) as error:
        raise PoolReadError(f"{launch.urn}: user data is no gzipped cloud-config ({error})") from None
    env = next((f["content"] for f in files if f.get("path") == "/etc/gpufleet/eks.env"), None)
    if env is None:
        raise PoolReadError(f"{launch.urn}: user data writes no /etc/gpufleet/eks.env (the kubelet's labels, taints)")
    return dict(line.split("=", 1) for line in shlex.split(env, comments=True) if "=" in line)


def _linked_launch_template(resource: RecordedResource,
                            by_urn: dict[str, RecordedResource]) -> RecordedResource | None:
    linked = {urn for urns in resource.property_dependencies.values() for urn in urns} | set(resource.depends_on)
    return next((by_urn[urn] for urn in sorted(linked)
                 if urn in by_urn and by_urn[urn].type == "aws:ec2/launchTemplate:LaunchTemplate"), None)


def _split(text: str) -> list[str]:
    return [part for part in text.split(",") if part]


def _asg_variants(asg: dict[str, Any]) -> dict[str, dict[str, str]]:
    """The lifecycle label each kind of node of the scaling group registers with."""
    distribution = (asg.get("mixedInstancesPolicy") or {}).get("instancesDistribution")
    if distribution is None:
        return {"on-demand": {LIFECYCLE_LABEL: "on-demand"}}
    kinds = {}
    if int(distribution.get("onDemandBaseCapacity") or 0) > 0 or int(
            distribution.get("onDemandPercentageAboveBaseCapacity") or 0) > 0:
        kinds["on-demand"] = {LIFECYCLE_LABEL: "on-demand"}
    if int(distribution.get("onDemandPercentageAboveBaseCapacity") or 0) < 100:
        kinds["spot"] = {LIFECYCLE_LABEL: "spot"}
    return kinds


def _eks(resources: Sequence[RecordedResource], resolved: ResolvedCluster) -> list[NodeTemplate]:
    by_urn = {r.urn: r for r in resources}
    made: list[NodeTemplate] = []
    for asg in (r for r in resources if r.type == "aws:autoscaling/group:Group"):
        launch = _linked_launch_template(asg, by_urn)
        if launch is None:
            raise PoolReadError(f"{asg.urn}: no launch template to read the kubelet's labels and taints from")
        settings = _kubelet_settings(launch)
        labels = dict(pair.split("=", 1) for pair in _split(settings.get("GPUFLEET_EKS_LABELS", "")))
        taints = [_taint_text(text) for text in _split(settings.get("GPUFLEET_EKS_TAINTS", ""))]
        prefix = TEMPLATE_RESOURCES
        advertised = parsed_resources({tag["key"].removeprefix(prefix): tag["value"] for tag in asg.inputs.get("tags")
                                       or [] if tag["key"].startswith(prefix)})
        overrides = ((asg.inputs.get("mixedInstancesPolicy") or {}).get("launchTemplate") or {}).get("overrides")
        types = [o["instanceType"] for o in overrides or []] or [launch.inputs["instanceType"]]
        made += templates("aws", labels.get(GROUP_LABEL, asg.name), types, labels, taints, advertised, resolved,
                          _asg_variants(asg.inputs))
    for pool in (r for r in resources if r.type == "aws:eks/nodeGroup:NodeGroup"):
        inputs = pool.inputs
        name = inputs.get("nodeGroupName") or pool.name
        capacity = inputs.get("capacityType") or "ON_DEMAND"
        labels = {**(inputs.get("labels") or {}), EKS_NODEGROUP_LABEL: name, EKS_CAPACITY_LABEL: capacity}
        taints = [Taint(t["key"], t.get("value") or "", EKS_EFFECTS[t["effect"]]) for t in inputs.get("taints") or []]
        group = next((g for g in resolved.groups if g.name == labels.get(GROUP_LABEL, name)), None)
        launch = _linked_launch_template(pool, by_urn)
        types = inputs.get("instanceTypes") or [launch.inputs.get("instanceType", "") if launch else ""]
        made += templates("aws", name, types, labels, taints, gpu_allocatable(group), resolved)
    return made


def _aks(resources: Sequence[RecordedResource], resolved: ResolvedCluster) -> list[NodeTemplate]:
    pools: list[dict[str, Any]] = []
    for cluster in (r for r in resources if r.type == "azure-native:containerservice:ManagedCluster"):
        pools += cluster.inputs.get("agentPoolProfiles") or []
    pools += [{**r.inputs, "name": r.inputs.get("agentPoolName") or r.name} for r in resources
              if r.type == "azure-native:containerservice:AgentPool"]
    ib_plugin = any(r.type == "kubernetes:mellanox.com/v1alpha1:NicClusterPolicy" for r in resources)
    made: list[NodeTemplate] = []
    for pool in pools:
        name = pool["name"]
        labels = {**(pool.get("nodeLabels") or {}), AKS_POOL_LABEL: name,
                  AKS_MODE_LABEL: str(pool.get("mode") or "User").lower()}
        taints = [_taint_text(text) for text in pool.get("nodeTaints") or []]
        if pool.get("scaleSetPriority") == "Spot":
            labels[AKS_SPOT.key] = AKS_SPOT.value
            taints.append(AKS_SPOT)
        group = next((g for g in resolved.groups if g.name == labels.get(GROUP_LABEL, name)), None)
        advertised = gpu_allocatable(group)
        if ib_plugin and group is not None and group.rdma and group.fabric == "infiniband":
            advertised[IB_RESOURCE] = Fraction(HCA_MAX)
        if group is not None:  # the label the node check sets on a node that passed (node_check.NODE_CHECK_LABEL)
            labels = {**labels, NODE_CHECK_LABEL[0]: NODE_CHECK_LABEL[1]}
        made += templates("azure", name, [pool["vmSize"]], labels, taints, advertised, resolved)
    return made


def _ack(resources: Sequence[RecordedResource], resolved: ResolvedCluster) -> list[NodeTemplate]:
    erdma = any(r.type == "alicloud:cs/kubernetesAddon:KubernetesAddon" and r.inputs.get("name")
                == "ack-erdma-controller" for r in resources)
    made: list[NodeTemplate] = []
    for pool in (r for r in resources if r.type == "alicloud:cs/nodePool:NodePool"):
        inputs = pool.inputs
        name = inputs.get("nodePoolName") or pool.name
        labels = {label["key"]: label.get("value") or "" for label in inputs.get("labels") or []}
        taints = [Taint(t["key"], t.get("value") or "", t.get("effect") or "NoSchedule")
                  for t in inputs.get("taints") or []]
        group = next((g for g in resolved.groups if g.name == labels.get(GROUP_LABEL, name)), None)
        advertised = gpu_allocatable(group)
        if erdma and group is not None and group.rdma and group.fabric == "erdma":
            advertised[ERDMA_RESOURCE] = None
        if group is not None:  # the label the node check sets on a node that passed (node_check.NODE_CHECK_LABEL)
            labels = {**labels, NODE_CHECK_LABEL[0]: NODE_CHECK_LABEL[1]}
        made += templates("alicloud", name, inputs.get("instanceTypes") or [], labels, taints, advertised, resolved)
    return made


READERS = {"aws": _eks, "azure": _aks, "alicloud": _ack}


def node_templates(resources: Sequence[RecordedResource], resolved: ResolvedCluster) -> list[NodeTemplate]:
    """Every kind of node the plan's groups make."""
    return READERS[resolved.spec.cloud](resources, resolved)
