"""What a node group's bootstrap needs to know, validated on construction.

Values a stack file gives (cloud, names, scratch, mounts, checkpoint hook) and the lock's versions arrive checked
by their pydantic models; what is checked here is what the program derives: the expected types, hooks, ports,
retries, and that the cloud does what a setting asks of its node scripts (its backend's capabilities)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import get_args

from gpufleet.catalog.mig import MAX_DEVICES_PER_GPU
from gpufleet.catalog.model import FabricKind
from gpufleet.clouds.lookup import backend
from gpufleet.clouds.registry import CLOUDS, Cloud
from gpufleet.stackfile.models import ScratchMode

from .errors import BootstrapError
from .mig import MigLayout
from .operations import GpuMetrics, SharedMount

FABRICS = get_args(FabricKind)
# Each setting of the node's operations, by the backend operation whose node scripts carry it out
# (gpu-health-<cloud>.sh: publish, mark_unhealthy; the Lustre mount).
OPERATION_OF = {"gpu_metrics": "monitoring", "shared_mount": "shared_storage"}
# The azhpc-images VM families whose NCCL settings an Azure InfiniBand node writes (components/clouds/azure/nccl.py).
NCCL_FAMILIES = ("ndv4", "ndv5")


def _require_text(field: str, value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise BootstrapError(f"{field}: must be a non-empty string, got {value!r}")


@dataclass(frozen=True)
class ExpectedType:
    """What the node check expects on one instance type."""

    gpu_model: str
    """GPU model name as the catalog gives it (H100, H200, ...)."""
    gpu_count: int
    """GPUs per node."""
    nvswitch: bool
    """Whether the type has NVSwitch, so the fabric manager must run."""
    fabric: str
    """RDMA fabric in use: efa, infiniband, erdma, roce, or none."""
    fabric_interfaces: int
    """RDMA interfaces the node must show; 0 with fabric none."""
    mig_devices: int = 0
    """MIG devices the node check counts on each GPU; 0: MIG is not applied (whole GPUs, not checked)."""

    def validate(self, where: str) -> None:
        _require_text(f"{where}.gpu_model", self.gpu_model)
        if not isinstance(self.gpu_count, int) or isinstance(self.gpu_count, bool) or self.gpu_count < 1:
            raise BootstrapError(f"{where}.gpu_count: must be an integer >= 1, got {self.gpu_count!r}")
        if not isinstance(self.nvswitch, bool):
            raise BootstrapError(f"{where}.nvswitch: must be true or false, got {self.nvswitch!r}")
        if self.fabric not in FABRICS:
            raise BootstrapError(f"{where}.fabric: must be one of {', '.join(FABRICS)}, got {self.fabric!r}")
        interfaces = self.fabric_interfaces
        if not isinstance(interfaces, int) or isinstance(interfaces, bool) or interfaces < 0:
            raise BootstrapError(f"{where}.fabric_interfaces: must be an integer >= 0, got {interfaces!r}")
        if (self.fabric == "none") != (interfaces == 0):
            raise BootstrapError(
                f"{where}.fabric_interfaces: {interfaces} does not fit fabric {self.fabric!r} "
                "(none takes 0 interfaces, a fabric at least 1)"
            )
        mig = self.mig_devices
        if not isinstance(mig, int) or isinstance(mig, bool) or not 0 <= mig <= MAX_DEVICES_PER_GPU:
            raise BootstrapError(f"{where}.mig_devices: must be an integer 0-{MAX_DEVICES_PER_GPU}, got {mig!r}")

    def to_json(self) -> dict[str, object]:
        document: dict[str, object] = {
            "gpu_model": self.gpu_model,
            "gpu_count": self.gpu_count,
            "nvswitch": self.nvswitch,
            "fabric": self.fabric,
            "fabric_interfaces": self.fabric_interfaces,
        }
        if self.mig_devices:  # only where MIG is applied: a whole-GPU node's expectation is unchanged
            document["mig_devices"] = self.mig_devices
        return document


@dataclass(frozen=True)
class LifecycleHooks:
    """The scaling group and lifecycle hooks a node completes (scripts/common.sh), on a cloud whose backend says
    node_completes_hooks. Alibaba Cloud's does not: ESS gives the lifecycle action token to the hook's notification
    target only, so an OOS execution runs gate.py's commands on the node (clouds/alicloud/scale_out_gate.py)."""

    region: str
    """Region of the group, for the cloud's CLI."""
    group_name: str
    """Name of the scaling group."""
    launch_hook: str
    """Hook the node check completes (CONTINUE or ABANDON)."""
    terminate_hook: str
    """Hook the spot watcher completes with CONTINUE after the checkpoint."""


@dataclass(frozen=True)
class BootstrapConfig:
    """Everything rendered into one node group's user data."""

    cloud: Cloud
    """Cloud of the node group; picks the metadata service the scripts use."""
    cluster: str
    """Cluster name."""
    node_group: str
    """Node group name."""
    image_profile: str
    """Profile of images/lock.yaml the image carries."""
    driver: str
    """NVIDIA driver version the node check expects."""
    cuda: str
    """CUDA version the node check expects."""
    fabric_manager: str
    """Fabric manager version the node check expects (equal to the driver)."""
    expected: Mapping[str, ExpectedType]
    """Per instance type of the group: what the node check expects."""
    scratch: ScratchMode
    """raid0: stripe the local NVMe disks at scratch_mount; none: leave them."""
    scratch_mount: str
    """Absolute mount path of the scratch array."""
    checkpoint_hook: str | None
    """Command run once per interruption notice; None only logs the notice."""
    checkpoint_grace_seconds: int
    """How long the checkpoint hook may run; on AWS also the terminate hook's heartbeat timeout."""
    lifecycle: LifecycleHooks | None = None
    """Scaling groups with lifecycle hooks: the group and hooks the node completes; None elsewhere."""
    health_port: int | None = None
    """Serve the node check result on 127.0.0.1:PORT for the cloud's health probe (200 healthy, 503 not),
    which the cloud acts on (Azure's Application Health extension and automatic repairs); None: no endpoint."""
    fabric_mtu: int | None = None
    """MTU the node sets on its fabric interfaces before the node check, which asserts it (eRDMA: Alibaba's rule,
    clouds/alicloud/eri.py); None leaves it."""
    metadata_guard: bool = False
    """Only root may reach the metadata service: where the launch path cannot require metadata tokens."""
    gpu_metrics: GpuMetrics | None = None
    """Ship GPU metrics and watch DCGM's error fields (components.bootstrap.operations); None: neither."""
    shared_mount: SharedMount | None = None
    """The shared Lustre file system to mount; None: none."""
    node_check_retry_seconds: int = 0
    """How long a boot node check that finds drift is run again before the node is given up; 0: once. Each cloud
    keeps it inside the time it holds a new node before acting on a failed check (clouds/hooks.py)."""
    node_check_retry_interval: int = 30
    """Seconds between two boot node checks while retrying."""
    mig: MigLayout | None = None
    """Partition every GPU at boot, before the node check (scripts/mig.sh); None: whole GPUs."""
    nccl_family: str | None = None
    """Azure InfiniBand groups: the azhpc-images VM family (ndv4, ndv5) whose /etc/nccl.conf the node writes at
    boot (scripts/nccl-conf.sh, components/clouds/azure/nccl.py); None: no nccl.conf."""
    slurm_leave: str | None = None
    """Slurm nodes: gpufleet-slurm-leave (components/slurm/spot_leave.py), which the spot watcher runs on an
    interruption notice; None: no Slurm."""

    def __post_init__(self) -> None:
        if not self.expected:
            raise BootstrapError("expected: needs at least one instance type")
        for instance_type, expectation in self.expected.items():
            _require_text("expected (instance type)", instance_type)
            if not isinstance(expectation, ExpectedType):
                raise BootstrapError(f"expected[{instance_type}]: must be an ExpectedType")
            expectation.validate(f"expected[{instance_type}]")
        grace = self.checkpoint_grace_seconds
        if not isinstance(grace, int) or isinstance(grace, bool) or grace < 1:
            raise BootstrapError(f"checkpoint_grace_seconds: must be an integer >= 1, got {grace!r}")
        retry, interval = self.node_check_retry_seconds, self.node_check_retry_interval
        if not isinstance(retry, int) or isinstance(retry, bool) or retry < 0:
            raise BootstrapError(f"node_check_retry_seconds: must be an integer >= 0, got {retry!r}")
        if not isinstance(interval, int) or isinstance(interval, bool) or interval < 1:
            raise BootstrapError(f"node_check_retry_interval: must be an integer >= 1, got {interval!r}")
        mtu = self.fabric_mtu
        if mtu is not None and (not isinstance(mtu, int) or isinstance(mtu, bool) or not 1280 <= mtu <= 9000):
            raise BootstrapError(f"fabric_mtu: must be an integer from 1280 to 9000, got {mtu!r}")
        if self.lifecycle is not None:
            if not backend(self.cloud).node_completes_hooks:
                hooked = [cloud for cloud in CLOUDS if backend(cloud).node_completes_hooks]
                raise BootstrapError(f"lifecycle: only for cloud {', '.join(hooked)}, not {self.cloud}")
            for field in ("region", "group_name", "launch_hook", "terminate_hook"):
                _require_text(f"lifecycle.{field}", getattr(self.lifecycle, field))

        kinds = {e.nvswitch for e in self.expected.values()}
        if len(kinds) > 1:
            with_switches = sorted(t for t, e in self.expected.items() if e.nvswitch)
            raise BootstrapError(
                f"node group {self.node_group}: instance types with NVSwitches ({', '.join(with_switches)}) and "
                "without cannot share a group: the bootstrap starts the fabric manager per group; give them groups "
                "of their own"
            )
        self._validate_operations()
        self._validate_mig()

        if self.nccl_family is not None and (self.cloud != "azure" or self.nccl_family not in NCCL_FAMILIES):
            raise BootstrapError(f"nccl_family: one of {', '.join(NCCL_FAMILIES)} on azure, got {self.nccl_family!r} "
                                 f"on {self.cloud}")

        port = self.health_port
        if port is not None and (not isinstance(port, int) or isinstance(port, bool) or not 1024 <= port <= 65535):
            raise BootstrapError(f"health_port: must be an unprivileged port 1024-65535, got {port!r}")

    @property
    def nvswitch(self) -> bool:
        """The group's types have NVSwitches: the node runs the fabric manager (the image leaves it disabled)."""
        return all(e.nvswitch for e in self.expected.values())

    def _validate_mig(self) -> None:
        want = 0
        if self.mig is not None:
            if not isinstance(self.mig, MigLayout):
                raise BootstrapError("mig: must be a MigLayout")
            problem = self.mig.problem()
            if problem:
                raise BootstrapError(problem)
            want = self.mig.per_gpu
        wrong = sorted(t for t, e in self.expected.items() if e.mig_devices != want)
        if wrong:
            raise BootstrapError(
                f"expected[{wrong[0]}].mig_devices: the node check must count the {want} MIG devices per GPU the boot "
                f"creates ({'profile ' + self.mig.profile if self.mig else 'no MIG'})"
            )

    def _validate_operations(self) -> None:
        for field, operation in OPERATION_OF.items():
            value = getattr(self, field)
            if value is None:
                continue
            if operation not in backend(self.cloud).operations:
                clouds = [cloud for cloud in CLOUDS if operation in backend(cloud).operations]
                raise BootstrapError(f"{field}: only for cloud {', '.join(clouds)}, not {self.cloud}")
            value.validate()
