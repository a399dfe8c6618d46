"""Node scripts for eRDMA nodes: MTU 8500 on the ERIs only, and the metadata service kept to root."""

from __future__ import annotations

import pytest
from bootstrap_node import Node, config, node_files

from components.bootstrap import BootstrapError, render_user_data


def _node(tmp_path, **changes) -> Node:
    node = Node(tmp_path, config("alicloud", **changes))
    net = tmp_path / "sys-net"
    for dev in ("lo", "eth0", "eth1", "eth2"):
        (net / dev).mkdir(parents=True)
    with (node.root / "etc/gpufleet/bootstrap.env").open("a") as settings:
        settings.write(f"GPUFLEET_SYS_NET={net}\n")
    node.stub("ip", "exit 0")
    node.stub("iptables", '[[ $1 == -C ]] && exit 1; exit 0')
    return node


def test_erdma_node_sets_mtu_8500_on_the_eris_never_the_primary_interface(tmp_path):
    node = _node(tmp_path, fabric_mtu=8500)
    # `ip -o route show default` as iproute2 prints it: the primary ENI carries the default route.
    node.stub("ip", '[[ $* == "-o route show default" ]] && echo "default via 10.0.0.253 dev eth0 proto dhcp '
                    'src 10.0.0.12 metric 100"; exit 0')
    assert node.run("gpufleet-health").returncode == 0
    assert [c for c in node.calls() if c.startswith("ip link")] == [
        f"ip link set dev {dev} mtu 8500" for dev in ("eth1", "eth2")]


def test_without_a_default_route_no_mtu_is_set(tmp_path):
    node = _node(tmp_path, fabric_mtu=8500)
    run = node.run("gpufleet-health")
    assert run.returncode == 0 and not [c for c in node.calls() if c.startswith("ip link")]
    assert "no default route to tell the primary interface" in run.stderr


def test_metadata_guard_rejects_all_but_root_and_containers(tmp_path):
    node = _node(tmp_path, metadata_guard=True)
    assert node.run("gpufleet-health").returncode == 0
    inserted = [c for c in node.calls() if c.startswith("iptables -I")]
    assert inserted == [
        "iptables -I OUTPUT -d 100.100.100.200 -m owner ! --uid-owner 0 -j REJECT",
        "iptables -I FORWARD -d 100.100.100.200 -j REJECT",
    ]


def test_without_fabric_mtu_or_guard_nothing_is_changed(tmp_path):
    node = _node(tmp_path)
    assert node.run("gpufleet-health").returncode == 0
    assert not [c for c in node.calls() if c.startswith(("ip ", "iptables "))]


def test_settings_carry_mtu_and_guard():
    settings = node_files(render_user_data(config("alicloud", fabric_mtu=8500, metadata_guard=True)))[
        "/etc/gpufleet/bootstrap.env"]["content"]
    assert "GPUFLEET_FABRIC_MTU=8500" in settings and "GPUFLEET_METADATA_GUARD=root-only" in settings


def test_mtu_out_of_range_is_refused():
    with pytest.raises(BootstrapError, match="fabric_mtu: must be an integer from 1280 to 9000"):
        config("alicloud", fabric_mtu=65000)
