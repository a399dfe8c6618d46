"""What the Slurm rendering derives from the resolved cluster: node sets and partitions, node features and GRES."""

from __future__ import annotations

from pathlib import Path

import pytest
from slurm_daemons import site_in
from slurm_stacks import second_group, slurm_cluster

from components.slurm.gres_conf import render_gres_conf
from components.slurm.registration import slurmd_registration
from components.slurm.slurm_conf import render_slurm_conf
from gpufleet.resolve import resolve_cluster


def _lines(text: str, key: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(f"{key}=")]


def test_partitions_over_node_sets_of_the_groups(tmp_path: Path) -> None:
    raw = slurm_cluster(partitions={"train": ["h100"], "all": ["h100", "l40s"]})
    second_group(raw, "l40s", instance_types=["g6e.48xlarge"], rdma="off", size={"min": 0, "desired": 0, "max": 4})
    text = render_slurm_conf(resolve_cluster(raw), site_in(tmp_path, "true"))
    assert _lines(text, "NodeSet") == ["NodeSet=h100 Feature=h100", "NodeSet=l40s Feature=l40s"]
    assert _lines(text, "PartitionName") == [
        "PartitionName=train Nodes=h100 State=UP MaxTime=INFINITE Default=YES",
        "PartitionName=all Nodes=h100,l40s State=UP MaxTime=INFINITE",
    ]
    assert _lines(text, "MaxNodeCount") == ["MaxNodeCount=20"]
    assert _lines(text, "SuspendTime") == ["SuspendTime=1800"]  # the default 30 minutes
    # Nodes fetch the configuration from slurmctld; srun listens on the range the head node's firewall admits.
    assert _lines(text, "SlurmctldParameters") == ["SlurmctldParameters=enable_configless"]
    assert _lines(text, "SrunPortRange") == ["SrunPortRange=60001-63000"]


@pytest.mark.parametrize(("stack", "argv_conf", "gres"), [
    ("aws-train-p5", "Gres=gpu:h100:8 Feature=h100,p5.48xlarge,efa,us-east-1a Topology=default:fabric-h100",
     "Name=gpu Type=h100 File=/dev/nvidia[0-7]\n"),
    ("azure-train-ndh100",
     "Gres=gpu:h100:8 Feature=h100,Standard_ND96isr_H100_v5,infiniband,1 Topology=default:fabric-h100",
     "Name=gpu Type=h100 File=/dev/nvidia[0-7]\n"),
    ("alicloud-train-ebmgn8v",
     "Gres=gpu:h20:8 Feature=h20,ecs.ebmgn8v.48xlarge,erdma,cn-wulanchabu-c Topology=default:fabric-h20",
     "Name=gpu Type=h20 File=/dev/nvidia[0-7]\n"),
])
def test_each_cloud_registers_its_group_type_fabric_zone_and_switch(stack: str, argv_conf: str, gres: str) -> None:
    group = resolve_cluster(slurm_cluster(stack)).groups[0]
    instance = group.known_types[0]
    argv = slurmd_registration(group, instance, group.zones[0], "n1")
    assert argv == ["slurmd", "-Z", "-N", f"{group.name}-n1", "--conf", argv_conf]
    assert render_gres_conf(instance) == gres
