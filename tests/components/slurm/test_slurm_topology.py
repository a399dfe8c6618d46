"""The topology the rendering derives from the fabric groups: topology.conf's switches, each node's Topology= at
registration, TopologyPlugin in slurm.conf and topology.conf among the head node's files, in the grammar of
topology.conf.5 and slurm.conf.5 (25.11). The daemons read them in test_slurm_topology_daemons.py."""

from __future__ import annotations

import re

import pytest
from slurm_stacks import SLURM_STACKS, second_group, slurm_cluster

from components.slurm.head_files import head_node_files, head_site
from components.slurm.registration import slurmd_registration
from components.slurm.slurm_conf import render_slurm_conf
from components.slurm.topology import render_topology_conf
from gpufleet.resolve import resolve_cluster

# topology.conf.5: a leaf switch line, its name at most 64 characters; no Nodes= (the nodes are dynamic).
SWITCH_LINE = re.compile(r"SwitchName=([^\s=]{1,64})")
# slurm.conf.5 "Topology": <topology_name>:<topology_unit>; topology.conf's topology is named "default".
NODE_TOPOLOGY = re.compile(r"Topology=default:(\S+)")


def registered_switch(argv: list[str]) -> str:
    found = NODE_TOPOLOGY.findall(argv[-1])
    assert len(found) == 1, argv
    return found[0]


def test_a_switch_per_rdma_group_and_one_for_the_nodes_without_rdma() -> None:
    raw = slurm_cluster(partitions={"train": ["h100", "h100b", "tcp", "tcp2"]})
    raw["node_groups"][0]["rdma"] = "auto"
    second_group(raw, "h100b")
    second_group(raw, "tcp", rdma="off")
    second_group(raw, "tcp2", rdma="off")
    cluster = resolve_cluster(raw)
    assert render_topology_conf(cluster) == "SwitchName=fabric-h100\nSwitchName=fabric-h100b\nSwitchName=network\n"
    joined = {group.name: registered_switch(slurmd_registration(group, group.known_types[0], group.zones[0], "n1"))
              for group in cluster.groups}
    assert joined == {"h100": "fabric-h100", "h100b": "fabric-h100b", "tcp": "network", "tcp2": "network"}


@pytest.mark.parametrize("stack", sorted(SLURM_STACKS))
def test_the_head_node_serves_the_switch_each_node_registers_with(stack: str) -> None:
    cluster = resolve_cluster(slurm_cluster(stack))
    site = head_site()
    files = head_node_files(cluster, site)
    lines = files[f"{site.etc_dir}/topology.conf"][1].splitlines()
    declared = [SWITCH_LINE.fullmatch(line)[1] for line in lines if SWITCH_LINE.fullmatch(line)]
    assert len(declared) == len(lines), lines
    named = {registered_switch(slurmd_registration(group, instance, zone, "n1"))
             for group in cluster.groups for instance in group.known_types for zone in group.zones}
    assert named == set(declared)
    assert "TopologyPlugin=topology/tree" in render_slurm_conf(cluster, site).splitlines()
