"""What an AKS cluster runs inside itself beyond the shared layer: the GPU Operator's driver and toolkit at the
lock's driver (AKS GPU pools take no custom image and install no driver), the Network Operator's DOCA driver and
RDMA shared device plugin on InfiniBand groups (with the NodeFeatureRule that labels their HCAs), and the node check
that labels each GPU node once it passes. The shared device plugin and DCGM exporter wait for the operator's
validation on their node (their pods need the driver) and for the node check's label (node_check.py: AKS pools cannot
carry a taint a pod lifts): no GPU is advertised before the node passed, and no DCGM exporter holds the GPUs while
the operator's MIG manager enables MIG mode (it stops only the systemd services and operator operands its
default-gpu-clients lists, gpu-operator v26.3.3 assets/state-mig-manager/0410_configmap.yaml; a GPU in use cannot
change mode). GPU feature discovery runs from the start: its labels start the MIG manager (gpu_operator.py). The
device plugin hands GPUs out as CDI devices (gpu_operator.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpufleet.lock.in_cluster_pins import node_os
from gpufleet.lock.kubernetes_components import KubernetesComponents

from . import dcgm, nvidia
from .gpu_operator import cdi_device_plugin, gpu_operator_objects, unpinned_driver, wait_for_driver
from .manifests import Obj, find, pod_spec
from .model import InClusterGroup
from .network_operator import infiniband_groups, mellanox_rule, network_operator_objects, unpinned_pulls
from .node_check import node_check_objects, passed
from .placement import SYSTEM_POOL, add_tolerations

# The GPU clients that run only on nodes that passed the node check (the module's text says why).
AFTER_CHECK = (nvidia.DAEMONSETS[0], dcgm.NAME)


def _required(driver: str | None, expectation: Mapping[str, Mapping[str, Any]] | None
              ) -> tuple[str, Mapping[str, Mapping[str, Any]]]:
    if not driver:
        raise ValueError("InClusterArgs.driver is empty: AKS GPU pools install no driver (gpu_profile.driver None), "
                         "the GPU Operator's driver container installs the lock profile's driver")
    if not expectation:
        raise ValueError("InClusterArgs.node_check is empty: AKS nodes run the node check from a DaemonSet, which "
                         "reads the lock's expectation (the expect.json document) from it")
    return driver, expectation


def azure_objects(shared: list[tuple[str, list[Obj]]], minor: str, groups: tuple[InClusterGroup, ...],
                  pins: KubernetesComponents, driver: str | None,
                  expectation: Mapping[str, Mapping[str, Any]] | None) -> list[tuple[str, list[Obj]]]:
    """The AKS components, the operator first (its CRDs), and the shared ones set to wait for the driver."""
    driver, expectation = _required(driver, expectation)
    validator = pins.gpu_operator.images["gpu-operator"].reference
    for component, objects in shared:
        if component == "node-feature-discovery":
            # NFD's master and gc may run on the system pool.
            for obj in (o for o in objects if "template" in o.get("spec", {})):
                add_tolerations(pod_spec(obj), [SYSTEM_POOL])
            if infiniband_groups(groups):
                objects.append(mellanox_rule())  # beside its CRD: created after it
        names = {"nvidia-device-plugin": nvidia.DAEMONSETS, "dcgm-exporter": (dcgm.NAME,)}.get(component, ())
        for name in names:
            daemonset = find(objects, "DaemonSet", name)
            wait_for_driver(daemonset, validator)
            if name in AFTER_CHECK:
                for term in pod_spec(daemonset)["affinity"]["nodeAffinity"][
                        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]:
                    term["matchExpressions"].append(passed())
        if component == "nvidia-device-plugin":
            cdi_device_plugin(find(objects, "DaemonSet", nvidia.DAEMONSETS[0]))
    return [("gpu-operator", gpu_operator_objects(groups, pins, driver, minor)), *shared,
            ("network-operator", network_operator_objects(groups, pins, node_os(minor))),
            ("node-check", node_check_objects(groups, pins, expectation))]


def azure_unpinned(driver: str | None, minor: str, groups: tuple[InClusterGroup, ...],
                   pins: KubernetesComponents) -> list[str]:
    """Reasons a real run refuses for images no pod spec names: those the operators pull (driver containers, the
    RDMA plugin)."""
    reason = unpinned_driver(driver, minor, pins) if driver else None
    found = [reason] if reason else []
    if infiniband_groups(groups):
        found += unpinned_pulls(pins, node_os(minor))
    return found
