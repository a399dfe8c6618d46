"""Which groups a slurm.conf's partitions take, read as slurm.conf.5 reads it."""

from __future__ import annotations

from policies.slurm_partitions import partition_groups

GROUPS = ["h100", "h100-spot", "l40s"]


def test_node_sets_by_feature_and_by_node_name() -> None:
    text = ("NodeSet=h100 Feature=h100\nnodeset=spot nodes=h100-spot-i-0abc,h100-i-1 # two groups\n"
            "PartitionName=DEFAULT MaxTime=INFINITE\n"
            "PartitionName=train Nodes=h100 Default=YES\npartitionname=mixed nodes=spot,l40s-i-9\n"
            "# PartitionName=commented Nodes=l40s\n")
    assert partition_groups(text, GROUPS) == {"train": ["h100"], "mixed": ["h100-spot", "h100", "l40s"]}


def test_all_takes_every_group_and_unknown_names_none() -> None:
    assert partition_groups("PartitionName=any Nodes=ALL\nPartitionName=odd Nodes=gpu[1-4]\n", GROUPS) == {
        "any": GROUPS, "odd": []}
