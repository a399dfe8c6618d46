"""InCluster: what a GPU Kubernetes cluster runs inside itself, as typed Kubernetes objects the plan shows.

The NVIDIA device plugin with GPU feature discovery and node-feature-discovery, a DCGM exporter, and on AWS the EFA
device plugin (EFA groups), Cluster Autoscaler and, on spot nodes, the node termination handler; on Azure the GPU
Operator's driver and toolkit, the Network Operator's DOCA driver and RDMA shared device plugin (InfiniBand
groups) and the node check (azure.py); on Alibaba only the node check, ACK running the rest itself (alicloud.py).
AKS and ACK scale their node pools themselves; ACK's eRDMA controller is the cloud side's. Each object comes from
a manifest rendered from a pinned upstream release (manifests/), set up for the node groups in code, and created as
its pulumi_kubernetes class through the Kubernetes provider the caller passes in `opts`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi

from gpufleet.lock.kubernetes_components import KubernetesComponents

from .alicloud import alicloud_objects
from .autoscaler import autoscaler_objects
from .azure import azure_objects, azure_unpinned
from .dcgm import dcgm_objects
from .efa import efa_groups, efa_objects
from .job_operators import job_operator_objects
from .manifests import Obj, is_custom, register
from .model import InClusterArgs, InClusterGroup, SystemScaling
from .nvidia import device_plugin_objects, nfd_objects
from .pins import component_pins, refuse_unconfirmed
from .termination_handler import termination_handler_objects

TYPE = "gpufleet:kubernetes:InCluster"
# Kinds a workload's pods need in place first: created before the workloads of their component.
WORKLOADS = frozenset({"DaemonSet", "Deployment", "StatefulSet", "Job", "CronJob"})


def component_objects(cloud: str, minor: str, region: str, groups: tuple[InClusterGroup, ...],
                      pins: KubernetesComponents, driver: str | None = None,
                      expectation: Mapping[str, Mapping[str, Any]] | None = None,
                      job_operators: tuple[str, ...] = (),
                      system: SystemScaling | None = None) -> list[tuple[str, list[Obj]]]:
    """(component, its objects in creation order) for the cluster: the whole in-cluster layer as plain data, the job
    operators asked for last (on every cloud)."""
    if cloud != "aws" and efa_groups(groups):
        raise ValueError(f"node groups {', '.join(g.name for g in efa_groups(groups))}: fabric efa is AWS's only")
    cgpu = [group.name for group in groups if group.sharing_mode == "memory-isolated"]
    if cloud != "alicloud" and cgpu:
        raise ValueError(f"node groups {', '.join(cgpu)}: sharing_mode memory-isolated is ACK's only (cGPU)")
    operators = job_operator_objects(job_operators, pins)
    if cloud == "alicloud":
        return [(component, objects) for component, objects in [*alicloud_objects(groups, pins, driver, expectation),
                                                                 *operators] if objects]
    found = [
        ("nvidia-device-plugin", device_plugin_objects(groups, pins)),
        ("node-feature-discovery", nfd_objects(groups, pins)),
        ("dcgm-exporter", dcgm_objects(groups, pins)),
    ]
    if cloud == "aws":
        found += [("aws-efa-k8s-device-plugin", efa_objects(groups, pins)),
                  ("cluster-autoscaler", autoscaler_objects(groups, pins, minor, region, system)),
                  ("aws-node-termination-handler", termination_handler_objects(groups, pins))]
    if cloud == "azure":
        found = azure_objects(found, minor, groups, pins, driver, expectation)
    return [(component, objects) for component, objects in [*found, *operators] if objects]


def refuse_unpinned(cloud: str, kubernetes_version: str, region: str, groups: tuple[InClusterGroup, ...],
                    driver: str | None = None, expectation: Mapping[str, Mapping[str, Any]] | None = None,
                    job_operators: tuple[str, ...] = ()) -> None:
    """Refuse a real run whose in-cluster images lack a digest; callers run it before creating any resource."""
    minor = ".".join(kubernetes_version.split(".")[:2])
    pins = component_pins()
    objects = component_objects(cloud, minor, region, groups, pins, driver, expectation, job_operators)
    refuse_unconfirmed([obj for _, found in objects for obj in found], pins,
                       azure_unpinned(driver, minor, groups, pins) if cloud == "azure" else ())


class InCluster(pulumi.ComponentResource):
    """The in-cluster layer of one cluster; `opts` carries the Kubernetes provider for the cluster."""

    def __init__(self, name: str, args: InClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        pins = component_pins()
        components = component_objects(args.cloud, args.minor, args.region, args.groups, pins, args.driver,
                                       args.node_check, args.job_operators, args.system_scaling)
        refuse_unconfirmed([obj for _, objects in components for obj in objects], pins,
                           azure_unpinned(args.driver, args.minor, args.groups, pins) if args.cloud == "azure" else ())
        self.objects: dict[str, list[pulumi.CustomResource]] = {}
        for component, objects in components:
            self.objects[component] = self._create(name, objects)
        self.register_outputs({})

    def _create(self, name: str, objects: list[Obj]) -> list[pulumi.CustomResource]:
        """Register one component's objects: its namespace first, its CRDs, config and RBAC next, its workloads and
        custom resources (whose CRDs must be in) last."""
        created: list[pulumi.CustomResource] = []
        namespaces = [obj for obj in objects if obj["kind"] == "Namespace"]
        rest = [obj for obj in objects if obj["kind"] != "Namespace"]
        for obj in namespaces:
            created.append(register(name, obj, pulumi.ResourceOptions(parent=self)))
        before = list(created)
        last = [o for o in rest if o["kind"] in WORKLOADS or is_custom(o)]
        for obj in (o for o in rest if o not in last):
            created.append(register(name, obj, pulumi.ResourceOptions(parent=self, depends_on=before)))
        ready = list(created)
        for obj in last:
            created.append(register(name, obj, pulumi.ResourceOptions(parent=self, depends_on=ready)))
        return created
