"""/etc/nccl.conf on Azure InfiniBand nodes, as Azure/azhpc-images writes it per VM family: the rendered
gpufleet-nccl-conf script run on a node whose sysfs shows eight InfiniBand HCAs and the accelerated-networking
NIC's RDMA device (link layer Ethernet), which NCCL must not be given."""

from __future__ import annotations

from pathlib import Path

import pytest
from bootstrap_node import Node, config, node_files

from components.bootstrap import BootstrapError, render_user_data

TOPOLOGY = "<system version=\"1\"/>\n"  # the file's presence is what the script reads, not its content


def _sysfs(root: Path, devices: dict[str, str]) -> Path:
    """/sys/class/infiniband as the kernel lays it out: <device>/ports/1/link_layer."""
    for device, layer in devices.items():
        port = root / device / "ports" / "1"
        port.mkdir(parents=True)
        (port / "link_layer").write_text(f"{layer}\n")
    return root


def _node(tmp_path: Path, family: str = "ndv5") -> Node:
    return Node(tmp_path, config("azure", nccl_family=family))


# ND H100 v5: eight 400 Gb/s InfiniBand HCAs; the accelerated-networking NIC's mlx5 device numbered among them.
ND_H100_V5 = {**{f"mlx5_{i}": "InfiniBand" for i in range(8)}, "mlx5_8": "Ethernet"}


@pytest.mark.parametrize("topology_in_image", [True, False])
def test_the_conf_names_the_infiniband_hcas_never_the_accelerated_networking_nic(
        tmp_path: Path, topology_in_image: bool) -> None:
    node = _node(tmp_path)
    sysfs = _sysfs(tmp_path / "sys", ND_H100_V5)
    topology = tmp_path / "opt-microsoft"
    topology.mkdir()
    if topology_in_image:
        (topology / "ndv5-topo.xml").write_text(TOPOLOGY)
    conf = tmp_path / "nccl.conf"
    result = node.run("gpufleet-nccl-conf", GPUFLEET_SYS_INFINIBAND=str(sysfs), GPUFLEET_NCCL_CONF=str(conf),
                      GPUFLEET_TOPOLOGY_DIR=str(topology))
    assert result.returncode == 0, result.stderr
    lines = conf.read_text().splitlines()
    assert "NCCL_IB_PCI_RELAXED_ORDERING=1" in lines and "NCCL_IGNORE_CPU_AFFINITY=1" in lines
    assert f"NCCL_IB_HCA=={','.join(f'mlx5_{i}' for i in range(8))}" in lines
    assert ("NCCL_TOPO_FILE=" + str(topology / "ndv5-topo.xml") in lines) is topology_in_image
    if not topology_in_image:
        assert "no topology file" in result.stderr


def test_no_infiniband_hca_writes_no_conf_and_fails(tmp_path: Path) -> None:
    node = _node(tmp_path)
    sysfs = _sysfs(tmp_path / "sys", {"mlx5_0": "Ethernet"})
    conf = tmp_path / "nccl.conf"
    result = node.run("gpufleet-nccl-conf", GPUFLEET_SYS_INFINIBAND=str(sysfs), GPUFLEET_NCCL_CONF=str(conf))
    assert result.returncode == 1 and not conf.exists()
    assert "no InfiniBand HCA" in result.stderr


def test_the_unit_runs_before_the_node_check_and_only_where_asked() -> None:
    with_conf = render_user_data(config("azure", nccl_family="ndv4"))
    files = node_files(with_conf)
    assert "GPUFLEET_NCCL_FAMILY=ndv4" in files["/etc/gpufleet/bootstrap.env"]["content"]
    unit = files["/etc/systemd/system/gpufleet-nccl-conf.service"]["content"]
    assert "Before=gpufleet-health.service" in unit and "ExecStart=/usr/local/sbin/gpufleet-nccl-conf" in unit
    assert "gpufleet-nccl-conf.service" in with_conf.split("runcmd:", 1)[1]
    assert "/etc/systemd/system/gpufleet-nccl-conf.service" not in node_files(render_user_data(config("azure")))


@pytest.mark.parametrize(("cloud", "family"), [("azure", "ndv6"), ("aws", "ndv5")])
def test_a_family_azhpc_images_has_no_conf_for_or_another_cloud_is_refused(cloud: str, family: str) -> None:
    with pytest.raises(BootstrapError, match="nccl_family:"):
        config(cloud, nccl_family=family)
