"""Node scripts for eRDMA nodes: MTU 8500 on the ERIs only, and the metadata service kept to root."""

from __future__ import annotations

import pytest
from bootstrap_node import Node, config, node_files

from components.bootstrap import BootstrapError, render_user_data

# `ip -o route show default` and `ip -d link show dev X` as iproute2 5.15 (Ubuntu 22.04) prints them: the primary
# ENI carries the default route; the detailed link line carries the driver's minmtu and maxmtu.
ROUTE = ('[[ $* == "-o route show default" ]] && echo "default via 10.0.0.253 dev eth0 proto dhcp src 10.0.0.12 '
         'metric 100" && exit 0\n')
LINK = ('[[ $1 == -d ]] && {{ m=$([[ $5 == eth1 ]] && echo "{eth1}" || echo "{eth2}"); printf "3: $5: <BROADCAST,'
        'MULTICAST,UP,LOWER_UP> mtu 1500 qdisc mq state UP mode DEFAULT group default qlen 1000\\n    link/ether '
        '00:16:3e:00:00:01 brd ff:ff:ff:ff:ff:ff promiscuity 0%s numtxqueues 4\\n" "$m"; exit 0; }}\n')
MAX = " minmtu 68 maxmtu {}"


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
    node.stub("ip", ROUTE + LINK.format(eth1=MAX.format(65535), eth2=MAX.format(9000)) + "exit 0")
    assert node.run("gpufleet-health").returncode == 0
    assert [c for c in node.calls() if c.startswith("ip link")] == [
        f"ip link set dev {dev} mtu 8500" for dev in ("eth1", "eth2")]


def test_an_interface_that_cannot_take_the_mtu_keeps_its_own(tmp_path):
    """An ERI whose driver reports a maximum under 8500 (or none) is left at its MTU: a wrong MTU corrupts."""
    node = _node(tmp_path, fabric_mtu=8500)
    node.stub("ip", ROUTE + LINK.format(eth1=MAX.format(1500), eth2="") + "exit 0")  # eth2 shows no maxmtu
    run = node.run("gpufleet-health")
    assert run.returncode == 0 and not [c for c in node.calls() if c.startswith("ip link set")]
    assert "eth1 takes at most MTU 1500, not 8500: its MTU stays" in run.stderr
    assert "eth2 takes at most MTU unknown, not 8500" in run.stderr


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
