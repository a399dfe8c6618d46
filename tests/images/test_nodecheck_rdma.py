"""The node check counts fabric ports the way each catalog family with a fabric exposes them in sysfs. Fixtures
are laid out from published outputs:

- ND H100 v5 (Standard_ND96isr_H100_v5): eight InfiniBand HCAs mlx5_ib0..7 at 400 Gb/s (Azure/azurehpc-health-
  checks conf/nd96isr_h100_v5.conf @7e6ac779, `check_hw_ib 400 mlx5_ib0:1` ... `mlx5_ib7:1`), plus the
  accelerated-networking NIC mlx5_an0 whose port's link layer is Ethernet (a published `ibv_devinfo` of an ND H200
  v5, the same ND v5 layout: mlx5_ib0..7 `link_layer: InfiniBand`, mlx5_an0 `link_layer: Ethernet`, all
  PORT_ACTIVE; the search tool did not name its repository).
- ND A100 v4 (Standard_ND96asr_v4): mlx5_ib0..7 at 200 Gb/s and mlx5_an0 at 40 Gb/s (azurehpc-health-checks
  conf/nd96asr_v4.conf @4bfa9a76, `check_hw_ib 200 mlx5_ib0:1` ... and `check_hw_ib 40 mlx5_an0:1`).
- p5.48xlarge EFA: devices named rdmap<bus>s<slot> (the EFA device plugin's log of a p5 in aws/eks-charts#1144
  lists /sys/class/infiniband/rdmap115s0, rdmap116s0, rdmap130s0 ... rdmap182s0; the excerpt read shows 16 of
  them, so the fixture holds those 16 and expects 16).
- ebmgn8v eRDMA: devices erdma_0 and erdma_1 (Mooncake's transfer-engine tests on Alibaba eRDMA use
  `erdma_0,erdma_1`), Ethernet link layer, bound to the erdma PCI driver (linux drivers/infiniband/hw/erdma/
  erdma_main.c), each on its ERI's interface (ports/1/gid_attrs/ndevs/0).
sysfs layout: /sys/class/infiniband/<device>/ports/<N>/{state,rate,link_layer}
(Linux Documentation/ABI/stable/sysfs-class-infiniband)."""

from __future__ import annotations

from pathlib import Path

import pytest

from images.nodecheck.checks import rdma_checks
from images.nodecheck.expect import ExpectationError, InstanceExpectation, parse_expectation

ACTIVE = "4: ACTIVE"
NDR, HDR = "400 Gb/sec (4X NDR)", "200 Gb/sec (4X HDR)"
P5_EFA = ["rdmap115s0", "rdmap116s0", "rdmap130s0", "rdmap131s0", "rdmap132s0", "rdmap133s0", "rdmap147s0",
          "rdmap148s0", "rdmap149s0", "rdmap150s0", "rdmap164s0", "rdmap165s0", "rdmap166s0", "rdmap167s0",
          "rdmap181s0", "rdmap182s0"]


def _device(root: Path, name: str, link_layer: str, state: str = ACTIVE, rate: str | None = None) -> None:
    port = root / "class" / "infiniband" / name / "ports" / "1"
    port.mkdir(parents=True)
    (port / "link_layer").write_text(f"{link_layer}\n")
    (port / "state").write_text(f"{state}\n")
    if rate is not None:  # written only where the source publishes it
        (port / "rate").write_text(f"{rate}\n")


def _azure_nd(root: Path, ib_rate: str, peermem: bool = True) -> Path:
    if peermem:  # /sys/module/<name> exists while a module is loaded
        (root / "module" / "nvidia_peermem").mkdir(parents=True)
    for i in range(8):
        _device(root, f"mlx5_ib{i}", "InfiniBand", rate=ib_rate)
    _device(root, "mlx5_an0", "Ethernet")  # PORT_ACTIVE like the HCAs
    return root


def _expect(fabric: str, interfaces: int) -> InstanceExpectation:
    return InstanceExpectation(gpu_model="H100", gpu_count=8, nvswitch=True, fabric=fabric,
                               fabric_interfaces=interfaces)


@pytest.mark.parametrize("ib_rate", [NDR, HDR], ids=["nd-h100-v5", "nd-a100-v4"])
def test_azure_nd_counts_its_eight_infiniband_ports_not_the_accelerated_networking_nic(
        tmp_path: Path, ib_rate: str) -> None:
    # Before: every mlx* port counted, 9 active where 8 are expected, and automatic repairs replaced the node.
    check, _ = rdma_checks(_expect("infiniband", 8), _azure_nd(tmp_path, ib_rate))
    assert check.name == "rdma_ib_ports_active" and check.ok, check
    assert check.found == {"active": 8, "rates": [ib_rate]}


def test_a_down_infiniband_port_still_fails_the_node(tmp_path: Path) -> None:
    root = _azure_nd(tmp_path, NDR)
    (root / "class/infiniband/mlx5_ib3/ports/1/state").write_text("1: DOWN\n")
    check, _ = rdma_checks(_expect("infiniband", 8), root)
    assert not check.ok and check.found == {"active": 7, "rates": [NDR]}


def test_p5_counts_its_efa_devices(tmp_path: Path) -> None:
    for name in P5_EFA:
        _device(tmp_path, name, "Unknown")  # the EFA count reads device names, not the link layer
    (check,) = rdma_checks(_expect("efa", len(P5_EFA)), tmp_path)
    assert check.name == "rdma_efa_devices" and check.ok and check.found == 16


def _erdma(root: Path, name: str, netdev: str, mtu: int, driver: str = "erdma") -> None:
    """An RDMA device bound to `driver` (device/driver links to the PCI driver's directory, as sysfs does) whose
    port's GID 0 is on `netdev` (ports/1/gid_attrs/ndevs/0), that interface at `mtu`."""
    _device(root, name, "Ethernet")
    device = root / "class" / "infiniband" / name
    (device / "device").mkdir()
    (device / "device" / "driver").symlink_to(f"../../../../bus/pci/drivers/{driver}")
    (device / "ports" / "1" / "gid_attrs" / "ndevs").mkdir(parents=True)
    (device / "ports" / "1" / "gid_attrs" / "ndevs" / "0").write_text(f"{netdev}\n")
    (root / "class" / "net" / netdev).mkdir(parents=True)
    (root / "class" / "net" / netdev / "mtu").write_text(f"{mtu}\n")


def test_ebmgn8v_counts_its_two_erdma_devices_and_an_infiniband_count_would_see_none(tmp_path: Path) -> None:
    _erdma(tmp_path, "erdma_0", "eth1", 1400)
    _erdma(tmp_path, "erdma_1", "eth2", 1400)
    (check,) = rdma_checks(_expect("erdma", 2), tmp_path)
    assert check.name == "rdma_erdma_devices" and check.ok and check.found == 2
    ib, _ = rdma_checks(_expect("infiniband", 2), tmp_path)
    assert not ib.ok and ib.found == {"active": 0, "rates": []}


def test_erdma_devices_are_counted_by_their_driver_not_their_name(tmp_path: Path) -> None:
    # Before: only names starting erdma_ counted, so a device the driver names otherwise was missed and a device
    # of another driver so named was counted.
    _erdma(tmp_path, "rdma0", "eth1", 1400)
    _erdma(tmp_path, "rdma1", "eth2", 1400)
    _erdma(tmp_path, "erdma_9", "eth3", 1400, driver="virtio-pci")
    (check,) = rdma_checks(_expect("erdma", 2), tmp_path)
    assert check.ok and check.found == 2


@pytest.mark.parametrize(("mtus", "ok", "found"), [
    ((1400, 1400), True, [1400]),
    ((1500, 1400), False, {"erdma_0": 1500}),  # the VPC default left on an ERI
    ((8500, 8500), False, {"erdma_0": 8500, "erdma_1": 8500}),  # jumbo frames the instance does not have
])
def test_each_eri_carries_the_mtu_the_expectation_names(tmp_path: Path, mtus: tuple[int, int], ok: bool,
                                                        found: object) -> None:
    for i, mtu in enumerate(mtus):
        _erdma(tmp_path, f"erdma_{i}", f"eth{i + 1}", mtu)
    devices, mtu_check = rdma_checks(_expect("erdma", 2), tmp_path, fabric_mtu=1400)
    assert devices.ok
    assert (mtu_check.name, mtu_check.ok, mtu_check.expected, mtu_check.found) == ("erdma_mtu", ok, 1400, found)


@pytest.mark.parametrize("loaded", [True, False])
def test_an_infiniband_group_needs_nvidia_peermem_loaded_for_gpudirect_rdma(tmp_path: Path, loaded: bool) -> None:
    ports, peermem = rdma_checks(_expect("infiniband", 8), _azure_nd(tmp_path, NDR, peermem=loaded))
    assert ports.ok
    assert peermem.name == "nvidia_peermem_loaded" and peermem.ok is loaded and peermem.found is loaded


@pytest.mark.parametrize("mtu", ["1400", 0, True])
def test_an_expectation_with_a_bad_fabric_mtu_is_unreadable(mtu: object) -> None:
    raw = {"profile": "p", "driver": "580.126.16", "cuda": "12.8.1", "fabric_manager": "580.126.16",
           "scratch_mount": None, "fabric_mtu": mtu, "instance_types": {"ecs.ebmgn8v.48xlarge": {
               "gpu_model": "H20", "gpu_count": 8, "nvswitch": True, "fabric": "erdma", "fabric_interfaces": 2}}}
    with pytest.raises(ExpectationError, match="fabric_mtu: expected a positive integer or null"):
        parse_expectation(raw)
    assert parse_expectation({**raw, "fabric_mtu": 1400}).fabric_mtu == 1400
