"""The NVIDIA GPU Operator for clouds whose node image carries no driver (AKS pools with gpu_profile.driver None).

Why the operator and not its pieces: the driver container, nvidia-peermem (GPUDirect RDMA) and the container
toolkit are operands the operator builds per node (kernel, OS release from NFD's labels, `-ubuntu24.04` tag suffix)
and upgrades in order (drain, driver-manager); NVIDIA documents them only through the operator (gpu-operator
docs "Microsoft Azure AKS", and Azure/aks-rdma-infiniband website/docs/configurations/02-gpu-drivers.md@700dabb:
GPU Operator v26.3.3 with driver.rdma.enabled on `--gpu-driver none` pools). The operator runs here with only the
driver and toolkit on (and the MIG manager where a group shares by MIG): the shared layer already runs the device
plugin, GFD, DCGM exporter and NFD.

One NVIDIADriver per node group (ClusterPolicy driver.useNvidiaDriverCRD): RDMA (nvidia-peermem) only on the
InfiniBand groups, whose nodes get the network operator's DOCA driver that nvidia-peermem builds against; a group
without InfiniBand gets a plain driver (peermem would wait for a MOFED that never comes). Each is placed by its
`nodeSelector`, the one placement field v26.3.3 reads (api/nvidia/v1alpha1/nvidiadriver_types.go:169-170;
GetNodeSelector, :540-549, puts a driver without one on every node with nvidia.com/gpu.present, and
internal/validator/validator.go:47-70 refuses drivers whose selected nodes overlap; `nodeAffinity`, :172-174, is read
by no controller of that tag), and tolerates the group's taints (the driver must be in before the node check runs).

One device path: the toolkit runs in CDI mode (cdi.enabled), so a pod gets its GPUs from the CDI devices the
kubelet names, not from NVIDIA_VISIBLE_DEVICES. The shared device plugin is set as the operator sets its own under
CDI (controllers/object_controls.go:1509-1516 transformDevicePluginCtrForCDI: DEVICE_LIST_STRATEGY
cdi-annotations,cdi-cri, CDI_ANNOTATION_PREFIX cdi.k8s.io/, NVIDIA_CDI_HOOK_PATH under the toolkit's installDir) and as
its chart renders nvidiaDriverRoot (k8s-device-plugin v0.20.0 templates/daemonset-device-plugin.yml:162-165,
:211-217, :247-252: the driver root mounted at /driver-root, where CDI spec generation reads it). The shared device
plugin and DCGM exporter wait for the operator's validation, as the operator's own operands do
(assets/state-device-plugin/0500_daemonset.yaml, init container toolkit-validation).

MIG: AKS pools made with gpuProfile.driver None get no MIG layout from AKS (its driver install would apply the pool's
gpuInstanceProfile; none runs). The operator's MIG manager partitions them: it runs on nodes the operator labels
nvidia.com/gpu.deploy.mig-manager, which it does for MIG-capable GPUs (controllers/state_manager.go:287-306, :421-423:
GFD's nvidia.com/mig.capable or an A100/H100/A30 product label, so GPU feature discovery must run before the check),
and applies the node's nvidia.com/mig.config from its default-mig-parted-config (assets/state-mig-manager/
0400_configmap.yaml). The device plugin and DCGM exporter wait for the node check, which compares the MIG layout with
the lock's (azure.py), so neither holds a GPU the manager is switching to MIG mode nor advertises one it has not
partitioned yet.
"""

from __future__ import annotations

from typing import Any

from gpufleet.lock.in_cluster_pins import driver_image
from gpufleet.lock.kubernetes_components import KubernetesComponents

from .manifests import Obj, find, pod_spec, read_manifest
from .model import InClusterGroup
from .placement import GPU_TAINT_KEY, INSTANCE_TYPE_LABEL, SYSTEM_POOL, add_tolerations, taint_tolerations

NAMESPACE = "gpu-operator"
VALIDATIONS = "/run/nvidia/validations"
RUNTIME_CLASS = "nvidia"  # values.yaml operator.runtimeClass: the RuntimeClass the toolkit's runtime serves
DRIVER_ROOT = "/run/nvidia/driver"  # values.yaml hostPaths.driverInstallDir: where the driver container puts it
TOOLKIT_DIR = "/usr/local/nvidia"  # ClusterPolicy toolkit.installDir (values.yaml's default)
CONTAINER_DRIVER_ROOT = "/driver-root"  # where the device plugin's chart mounts the driver root for CDI
# The device plugin's settings under CDI, as the operator gives its own (object_controls.go:1509-1516).
CDI_PLUGIN_ENV = {"DEVICE_LIST_STRATEGY": "cdi-annotations,cdi-cri", "CDI_ANNOTATION_PREFIX": "cdi.k8s.io/",
                  "NVIDIA_CDI_HOOK_PATH": f"{TOOLKIT_DIR}/toolkit/nvidia-cdi-hook", "NVIDIA_DRIVER_ROOT": DRIVER_ROOT}
OFF = ("devicePlugin", "dcgm", "dcgmExporter", "gfd", "migManager", "nodeStatusExporter", "gds", "gdrcopy",
       "vgpuManager", "vgpuDeviceManager", "vfioManager", "sandboxDevicePlugin", "kataManager", "ccManager")


def unpinned_driver(driver: str, minor: str, pins: KubernetesComponents) -> str | None:
    """Why the driver container the operator will pull is not pinned by digest, or None when it is (the image is in
    no pod spec of ours: the operator builds the driver DaemonSet from the NVIDIADriver)."""
    wanted = driver_image(driver, minor)
    pin = pins.gpu_operator.images["driver"]
    if pin.image != wanted:
        return f"{wanted}: the lock pins {pin.image} (gpu_operator.images.driver); pin this tag and its digest"
    return None if pin.digest else f"{wanted}: {pin.unconfirmed}"


def driver_version(driver: str, minor: str, pins: KubernetesComponents) -> str:
    """The NVIDIADriver's `version`: the lock's digest of the driver container when it pins this driver's tag, else
    the driver version, to which the operator appends `-<os>` (the tag then decides what is pulled).

    With a digest the operator pulls `repository/image@digest` and appends no OS suffix (gpu-operator v26.3.3
    api/nvidia/v1alpha1/nvidiadriver_types.go:557-570, NVIDIADriverSpec.GetImagePath: "if image digest is specified,
    use it directly"; internal/image/image.go:36, ImagePath: a version starting with sha256: joins with `@`). So
    the digest must be that of the `<driver>-<os>` tag of the OS this minor's nodes run, which is what the lock's
    pin is checked against here; one NVIDIADriver serves one group, whose nodes all run that OS. A digest is refused
    with precompiled drivers (GetPrecompiledImagePath, line 646): usePrecompiled stays off."""
    pin = pins.gpu_operator.images["driver"]
    return pin.digest if pin.digest and pin.image == driver_image(driver, minor) else driver


def _split(reference: str) -> tuple[str, str, str]:
    """(repository, image, version) as the ClusterPolicy's image fields take them; a digest goes in `version`
    (gpu-operator v26.3.3 api/nvidia/v1/clusterpolicy_types.go:2041, ImagePath: a version starting with sha256: is
    pulled as repository/image@version)."""
    name, _, digest = reference.partition("@")
    path, _, tag = name.rpartition(":")
    repository, _, image = path.rpartition("/")
    return repository, image, digest or tag


def _tolerations(groups: tuple[InClusterGroup, ...]) -> list[dict[str, Any]]:
    return [{"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}, *taint_tolerations(groups)]


def cluster_policy(groups: tuple[InClusterGroup, ...], pins: KubernetesComponents) -> Obj:
    """templates/clusterpolicy.yaml at values.yaml's defaults, with the operands this cluster needs."""
    images = pins.gpu_operator.images
    validator = _split(images["gpu-operator"].reference)
    toolkit = _split(images["container-toolkit"].reference)
    spec: dict[str, Any] = {
        "hostPaths": {"rootFS": "/", "driverInstallDir": DRIVER_ROOT},
        "operator": {"runtimeClass": RUNTIME_CLASS, "use_ocp_driver_toolkit": False},
        "daemonsets": {"priorityClassName": "system-node-critical", "tolerations": _tolerations(groups),
                       "updateStrategy": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "1"}},
        "validator": dict(zip(("repository", "image", "version"), validator, strict=True)),
        "mig": {"strategy": "single"},
        "psa": {"enabled": False},
        "cdi": {"enabled": True},
        "driver": {"enabled": True, "useNvidiaDriverCRD": True},
        "toolkit": {"enabled": True, "installDir": TOOLKIT_DIR,
                    **dict(zip(("repository", "image", "version"), toolkit, strict=True))},
    }
    spec.update({name: {"enabled": False} for name in OFF})
    if any(group.sharing_mode == "mig" for group in groups):
        # AKS pools take no MIG layout of ours and the driver is the operator's: its MIG manager applies the
        # nvidia.com/mig.config label the MIG groups' nodes carry (gpu_sharing.sharing_labels), values.yaml's default
        # config (all-disabled) elsewhere.
        manager = _split(images["k8s-mig-manager"].reference)
        spec["migManager"] = {"enabled": True, **dict(zip(("repository", "image", "version"), manager, strict=True)),
                              "config": {"default": "all-disabled"}}
    return {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"},
            "spec": spec}


def driver_node_selector(group: InClusterGroup) -> dict[str, str]:
    """The labels only the group's nodes carry, as the NVIDIADriver's nodeSelector (equality only): its labels (the
    pool's, gpufleet.io/group among them) and its instance type where it has one."""
    selector = dict(group.labels)
    if len(group.instance_types) == 1:
        selector[INSTANCE_TYPE_LABEL] = group.instance_types[0]
    if not selector:
        raise ValueError(f"node group {group.name!r}: no label and several instance types; an NVIDIADriver's "
                         "nodeSelector could not tell its nodes from another group's")
    return selector


def nvidia_driver(group: InClusterGroup, version: str, pins: KubernetesComponents) -> Obj:
    """The group's NVIDIADriver: the lock's driver (`version`: driver_version's), RDMA on InfiniBand groups, on the
    group's nodes only."""
    manager = _split(pins.gpu_operator.images["k8s-driver-manager"].reference)
    return {"apiVersion": "nvidia.com/v1alpha1", "kind": "NVIDIADriver", "metadata": {"name": group.name},
            "spec": {"driverType": "gpu", "repository": "nvcr.io/nvidia", "image": "driver", "version": version,
                     "usePrecompiled": False,
                     "manager": dict(zip(("repository", "image", "version"), manager, strict=True)),
                     "rdma": {"enabled": group.fabric == "infiniband", "useHostMofed": False},
                     "nodeSelector": driver_node_selector(group),
                     "tolerations": _tolerations((group,))}}


def gpu_operator_objects(groups: tuple[InClusterGroup, ...], pins: KubernetesComponents, driver: str,
                         minor: str) -> list[Obj]:
    """Namespace, CRDs, RBAC, the operator, its ClusterPolicy and one NVIDIADriver per group."""
    objects = read_manifest("gpu-operator").fresh()
    deployment = find(objects, "Deployment", "gpu-operator")
    (container,) = pod_spec(deployment)["containers"]
    container["image"] = pins.gpu_operator.images["gpu-operator"].reference
    for variable in container["env"]:
        if variable["name"] == "DRIVER_MANAGER_IMAGE":
            variable["value"] = pins.gpu_operator.images["k8s-driver-manager"].reference
    # The operator runs on the system pool (AKS taints it CriticalAddonsOnly=true:NoSchedule), not on GPU nodes.
    add_tolerations(pod_spec(deployment), [SYSTEM_POOL])
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    version = driver_version(driver, minor, pins)
    return [namespace, *objects, cluster_policy(groups, pins), *(nvidia_driver(g, version, pins) for g in groups)]


def wait_for_driver(daemonset: Obj, image: str) -> None:
    """An init container that holds the daemon until the operator validated the driver and toolkit on its node, the
    driver root where the driver container installs it, and the operator's runtime class, which its own operands
    run under (controllers/object_controls.go setRuntimeClassName: `nvidia` with CDI on containerd)."""
    spec = pod_spec(daemonset)
    spec["runtimeClassName"] = RUNTIME_CLASS
    spec.setdefault("initContainers", []).insert(0, {
        "name": "toolkit-validation", "image": image, "command": ["sh", "-c"],
        "args": [f"until [ -f {VALIDATIONS}/toolkit-ready ]; do echo waiting for nvidia container stack to be "
                 "setup; sleep 5; done"],
        "volumeMounts": [{"name": "run-nvidia-validations", "mountPath": VALIDATIONS,
                          "mountPropagation": "HostToContainer"}]})
    spec.setdefault("volumes", []).append({"name": "run-nvidia-validations",
                                           "hostPath": {"path": VALIDATIONS, "type": "DirectoryOrCreate"}})
    for volume in spec["volumes"]:
        if volume["name"] == "driver-root":
            volume["hostPath"]["path"] = DRIVER_ROOT


def cdi_device_plugin(daemonset: Obj) -> None:
    """The device plugin hands GPUs out as CDI devices, the toolkit's mode, with the driver root it reads the CDI
    spec from (the chart's nvidiaDriverRoot rendering); wait_for_driver runs first (driver-root volume)."""
    spec = pod_spec(daemonset)
    plugin = next(c for c in spec["containers"] if c["name"] == "nvidia-device-plugin-ctr")
    plugin["env"] = [v for v in plugin["env"] if v["name"] not in CDI_PLUGIN_ENV]
    plugin["env"] += [{"name": name, "value": value} for name, value in CDI_PLUGIN_ENV.items()]
    plugin["volumeMounts"].append({"name": "driver-root", "mountPath": CONTAINER_DRIVER_ROOT, "readOnly": True})
    spec["volumes"].append({"name": "driver-root", "hostPath": {"path": DRIVER_ROOT, "type": "Directory"}})
