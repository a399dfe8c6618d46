"""alicloud-slurm-partition-one-fabric over what the program registers for two eRDMA groups in two zones, each in a
partition of its own (the stack checks refuse one partition over both), and with the head's slurm.conf putting both
in one partition."""

from __future__ import annotations

from alicloud_slurm_plans import HEAD, INSTANCE, changed, named, slurm_resources
from slurm_resources import user_data_base64
from stack_rule_args import messages

POLICY = "alicloud-slurm-partition-one-fabric"
ZONES = ("cn-wulanchabu-c", "cn-wulanchabu-a")
ONE_PARTITION = ("ClusterName=train\nNodeSet=h20 Feature=h20\nNodeSet=h20b Feature=h20b\n"
                 "PartitionName=all Nodes=h20,h20b\n")


def _one_partition() -> list:
    resources = slurm_resources(ZONES[1])
    head = named(resources, INSTANCE, HEAD)
    return changed(resources, head, userData=user_data_base64({"/etc/slurm/slurm.conf": ONE_PARTITION}))


def test_a_partition_per_group_passes() -> None:
    assert messages(POLICY, list(slurm_resources(ZONES[1]))) == []


def test_one_partition_over_two_zones_fails() -> None:
    ((where, message),) = messages(POLICY, _one_partition())
    assert where == named(slurm_resources(ZONES[1]), INSTANCE, HEAD).urn
    assert message.startswith(f"partition all spans fabrics: it takes eRDMA groups h20 (zone {ZONES[0]}), h20b (zone "
                              f"{ZONES[1]})")


def test_a_group_the_stack_does_not_require_rdma_of_is_not_judged() -> None:
    assert messages(POLICY, _one_partition(), {"rdmaRequiredGroups": ["h20"]}) == []
