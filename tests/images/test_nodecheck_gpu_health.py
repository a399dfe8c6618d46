"""The node check judges the GPU as a job will use it: registered with its NVLink fabric (NVML fabric state on GPUs
that report one), CUDA starting and seeing every GPU, and memory judged as fleets judge it (images/nodecheck/ecc.py:
azurehpc-health-checks' rules), never by lifetime totals. NVML is tests/fake_nvml.py: nvidia-ml-py's own constants,
errors and structures answering for fake GPUs; the CUDA probe runs through ctypes against a stub libcuda.so.1 built
here with the driver API's signatures."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pynvml
import pytest
from fake_nvml import FakeGpu, fake_nvml

from images.nodecheck.__main__ import main
from images.nodecheck.checks import cuda_check, fabric_manager_checks, gpu_checks, nvswitch_check
from images.nodecheck.cuda import probe_cuda
from images.nodecheck.expect import Expectation, InstanceExpectation
from images.nodecheck.gpus import read_gpus
from images.nodecheck.host import nvswitch_devices

EXPECT = Expectation(profile="cuda12.8-r580", driver="580.126.16", cuda="12.8.1", fabric_manager="580.126.16",
                     scratch_mount=None, instance_types={})
P5 = InstanceExpectation(gpu_model="H100", gpu_count=8, nvswitch=True, fabric="efa", fabric_interfaces=32)
UNCORRECTED, CORRECTED = pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED
VOLATILE, AGGREGATE = pynvml.NVML_VOLATILE_ECC, pynvml.NVML_AGGREGATE_ECC
DRAM, SRAM = pynvml.NVML_MEMORY_LOCATION_DRAM, pynvml.NVML_MEMORY_LOCATION_SRAM
COMPLETED = pynvml.NVML_GPU_FABRIC_STATE_COMPLETED


def _checks(*gpus: FakeGpu, inst: InstanceExpectation = P5) -> dict[str, object]:
    healthy = [FakeGpu(fabric_state=COMPLETED)] * (inst.gpu_count - len(gpus))
    return {c.name: c for c in gpu_checks(EXPECT, inst, read_gpus(fake_nvml([*gpus, *healthy])))}


def test_a_gpu_still_joining_its_nvswitch_fabric_fails() -> None:
    # Before: no fabric probe; every NVML answer was fine, so the node was healthy while each cuInit failed.
    checks = _checks(FakeGpu(fabric_state=pynvml.NVML_GPU_FABRIC_STATE_IN_PROGRESS))
    fabric = checks["nvlink_fabric"]
    assert not fabric.ok and fabric.found == {"0": "IN_PROGRESS"}


def test_a_fabric_registration_that_completed_with_an_error_fails() -> None:
    checks = _checks(FakeGpu(fabric_state=COMPLETED, fabric_status=pynvml.NVML_ERROR_NOT_READY))
    assert not checks["nvlink_fabric"].ok
    assert checks["nvlink_fabric"].found == {"0": f"COMPLETED with status {pynvml.NVML_ERROR_NOT_READY}"}


def test_every_gpu_registered_passes_and_gpus_without_a_fabric_are_not_asked() -> None:
    assert _checks()["nvlink_fabric"].ok and _checks()["nvlink_fabric"].found == "COMPLETED on 8 of 8"
    pcie = InstanceExpectation(gpu_model="A10", gpu_count=1, nvswitch=False, fabric="none", fabric_interfaces=0)
    a10 = FakeGpu(name="NVIDIA A10", fabric_state=None)  # before Hopper: NVML_ERROR_NOT_SUPPORTED
    assert "nvlink_fabric" not in _checks(a10, inst=pcie)
    assert "nvlink_fabric" not in _checks(FakeGpu(name="NVIDIA A10"), inst=pcie)  # state NOT_SUPPORTED


def test_past_uncorrectable_errors_already_remapped_are_healthy() -> None:
    # Aggregate (lifetime) uncorrectable 3, none since the driver loaded, no remap pending: the rows were remapped.
    # Before: volatile + aggregate were summed and any sum above 0 failed the GPU for ever.
    remapped = FakeGpu(fabric_state=COMPLETED, total_ecc={(UNCORRECTED, AGGREGATE): 3, (UNCORRECTED, VOLATILE): 0},
                       memory_errors={(UNCORRECTED, AGGREGATE, DRAM): 3}, remapped_rows=(0, 3, 0, 0))
    memory = _checks(remapped)["gpu_memory"]
    assert memory.ok and memory.found == "healthy"


@pytest.mark.parametrize(("gpu", "problem"), [
    (FakeGpu(remapped_rows=(0, 1, 1, 0)), "row remap pending (the GPU needs a reset)"),
    (FakeGpu(remapped_rows=(0, 1, 0, 1)), "row remap failed"),
    (FakeGpu(total_ecc={(UNCORRECTED, VOLATILE): 1}), "1 uncorrectable since the driver loaded"),
    (FakeGpu(memory_errors={(UNCORRECTED, AGGREGATE, SRAM): 1}), "sram.uncorrected.aggregate 1"),
    (FakeGpu(memory_errors={(CORRECTED, VOLATILE, SRAM): 10_001}), "sram.corrected.volatile 10001 > 10000"),
    (FakeGpu(memory_errors={(CORRECTED, AGGREGATE, DRAM): 20_000_001}),
     "dram.corrected.aggregate 20000001 > 20000000"),
], ids=["remap-pending", "remap-failure", "volatile-dbe", "sram-uncorrectable", "sram-correctable", "dram"])
def test_memory_faults_fleets_replace_a_gpu_for_fail(gpu: FakeGpu, problem: str) -> None:
    memory = _checks(gpu)["gpu_memory"]
    assert not memory.ok and memory.found == {"0": [problem]}


def test_counters_a_gpu_does_not_support_are_not_judged() -> None:
    assert _checks(FakeGpu(fabric_state=COMPLETED, ecc_supported=False))["gpu_memory"].ok


@pytest.fixture(scope="module")
def stub_libcuda(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """Build a libcuda.so.1 whose cuInit returns `init`, with cuDeviceGetCount and cuGetErrorName as cuda.h declares
    them (CUresult cuInit(unsigned int); cuDeviceGetCount(int *); cuGetErrorName(CUresult, const char **))."""
    built: dict[tuple[int, int], Path] = {}

    def build(init: int, devices: int = 8) -> Path:
        if (init, devices) not in built:
            where = tmp_path_factory.mktemp(f"cuda{init}-{devices}")
            source = where / "cuda.c"
            source.write_text(f"""
int cuInit(unsigned int flags) {{ return {init}; }}
int cuDeviceGetCount(int *count) {{ *count = {devices}; return 0; }}
int cuGetErrorName(int error, const char **name) {{
  *name = error == 802 ? "CUDA_ERROR_SYSTEM_NOT_READY" : "CUDA_ERROR_UNKNOWN"; return 0; }}
""")
            subprocess.run(["gcc", "-shared", "-fPIC", "-o", where / "libcuda.so.1", source], check=True)
            built[(init, devices)] = where / "libcuda.so.1"
        return built[(init, devices)]
    return build


def test_cuda_that_cannot_start_fails_the_node_and_names_the_fabric_manager(stub_libcuda: Callable[..., Path]) -> None:
    reading = probe_cuda(str(stub_libcuda(802)))
    (check,) = cuda_check(P5, reading)
    assert not check.ok
    assert check.found == ("cuInit returned 802 (CUDA_ERROR_SYSTEM_NOT_READY): the NVSwitch fabric is not ready "
                           "(is the fabric manager running?)")


def test_cuda_that_starts_must_see_every_gpu(stub_libcuda: Callable[..., Path]) -> None:
    assert cuda_check(P5, probe_cuda(str(stub_libcuda(0, 8))))[0].ok
    (short,) = cuda_check(P5, probe_cuda(str(stub_libcuda(0, 7))))
    assert not short.ok and short.found == {"devices": 7}


def test_a_node_without_the_cuda_driver_library_fails(tmp_path: Path) -> None:
    (check,) = cuda_check(P5, probe_cuda(str(tmp_path / "libcuda.so.1")))
    assert not check.ok and str(check.found).startswith("cannot load ")


def _pci(root: Path, address: str, vendor: str, pci_class: str) -> None:
    device = root / "bus" / "pci" / "devices" / address
    device.mkdir(parents=True)
    (device / "vendor").write_text(f"{vendor}\n")
    (device / "class").write_text(f"{pci_class}\n")


def _hgx(root: Path, switches: int) -> Path:
    """An HGX board's PCI functions in sysfs: the GPUs (3D controller 0x0302), the NVSwitches (bridge 0x0680) and an
    Intel bridge of the same class."""
    for i in range(8):
        _pci(root, f"0000:{0x18 + i:02x}:00.0", "0x10de", "0x030200")
    for i in range(switches):
        _pci(root, f"0000:{0x07 + i:02x}:00.0", "0x10de", "0x068000")
    _pci(root, "0000:00:1f.0", "0x8086", "0x068000")
    return root


def test_nvswitches_are_read_from_the_pci_bus(tmp_path: Path) -> None:
    assert nvswitch_devices(_hgx(tmp_path / "h100", 4)) == [f"0000:{0x07 + i:02x}:00.0" for i in range(4)]
    assert nvswitch_devices(_hgx(tmp_path / "pcie", 0)) == []  # GPUs and an Intel bridge of the same class only
    (check,) = nvswitch_check(P5, nvswitch_devices(tmp_path / "h100"))
    assert check.ok and check.found == {"nvswitches": 4}
    # A type the catalog gives switches that its VM does not see: its fabric manager cannot run.
    assert not nvswitch_check(P5, [])[0].ok


def test_switches_the_catalog_does_not_know_still_get_their_fabric_manager_checked(tmp_path: Path) -> None:
    # An 8-GPU A100 type whose catalog row says no NVSwitch (Alibaba's ebmgn7e, gn7, gn7e rows). Before: nothing
    # looked at the bus, the fabric manager was neither started nor checked, and every CUDA start failed with 802.
    row = InstanceExpectation(gpu_model="A100", gpu_count=8, nvswitch=False, fabric="none", fabric_interfaces=0)
    switches = nvswitch_devices(_hgx(tmp_path, 6))
    assert nvswitch_check(row, switches)[0].ok
    answers = {"systemctl": (3, "inactive\n"), "nv-fabricmanager": (0, "Fabric Manager version is : 580.126.16\n")}
    checks = fabric_manager_checks(EXPECT, row, lambda argv: answers[argv[0]], nvswitches=switches)
    assert [(c.name, c.ok) for c in checks] == [("fabric_manager_active", False), ("fabric_manager_version", True)]
    assert fabric_manager_checks(EXPECT, row, lambda argv: answers[argv[0]], nvswitches=[]) == []


def test_the_cli_fails_a_node_whose_fabric_never_registered(tmp_path: Path, stub_libcuda: Callable[..., Path],
                                                            capsys: pytest.CaptureFixture) -> None:
    expect = tmp_path / "expect.json"
    expect.write_text(json.dumps({
        "profile": EXPECT.profile, "driver": EXPECT.driver, "cuda": EXPECT.cuda, "fabric_manager": EXPECT.driver,
        "scratch_mount": None, "instance_types": {"p5.48xlarge": {
            "gpu_model": "H100", "gpu_count": 8, "nvswitch": True, "fabric": "none", "fabric_interfaces": 0}}}))
    answers = {"systemctl": (0, "active\n"), "nv-fabricmanager": (0, "Fabric Manager version is : 580.126.16\n")}
    gpus = [FakeGpu(fabric_state=pynvml.NVML_GPU_FABRIC_STATE_NOT_STARTED)] * 8
    code = main(["--expect", str(expect), "--instance-type", "p5.48xlarge", "--sysfs-root", str(_hgx(tmp_path, 4)),
                 "--proc-root", str(tmp_path / "proc")], nvml=fake_nvml(gpus), run=lambda argv: answers[argv[0]],
                cuda=lambda: probe_cuda(str(stub_libcuda(802))))
    failed = {c["name"] for c in json.loads(capsys.readouterr().out)["checks"] if not c["ok"]}
    assert code == 1 and failed == {"nvlink_fabric", "cuda_init"}
