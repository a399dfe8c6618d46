"""`scheduler: {kind: slurm}` on VM clusters: defaults, and refusals naming the field and the reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run import run_main
from conftest import write_stack
from slurm_stacks import SLURM_STACKS, second_group, slurm_cluster
from stack_errors import errors_by_field

from gpufleet.catalog import Catalog
from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile.slurm_checks import head_node_type


@pytest.mark.parametrize("stack", sorted(SLURM_STACKS))
def test_each_shipped_vm_stack_turned_slurm_resolves_with_a_partition_per_group(stack: str) -> None:
    resolved = resolve_cluster(slurm_cluster(stack))
    scheduler = resolved.spec.scheduler
    group = resolved.groups[0].name
    assert scheduler.partitions_over([g.name for g in resolved.groups]) == {group: [group]}
    assert scheduler.accounting is False


def test_a_group_may_join_several_partitions() -> None:
    cluster = slurm_cluster(partitions={"train": ["h100"], "debug": ["h100"]})
    resolved = resolve_cluster(cluster)
    assert resolved.spec.scheduler.partitions_over(["h100"]) == {"train": ["h100"], "debug": ["h100"]}


def test_kubernetes_fields_with_slurm_are_refused() -> None:
    errors = errors_by_field(slurm_cluster(version="1.35"))
    assert "version only apply to kind: kubernetes" in errors["scheduler"]


def test_slurm_fields_on_another_kind_are_refused() -> None:
    cluster = slurm_cluster()
    cluster["scheduler"] = {"kind": "none", "suspend_after_minutes": 10}
    assert "suspend_after_minutes only apply to kind: slurm" in errors_by_field(cluster)["scheduler"]


def test_accounting_is_refused_until_built() -> None:
    assert "does not build yet" in errors_by_field(slurm_cluster(accounting=True))["scheduler"]


def test_a_partition_naming_an_unknown_group_is_refused() -> None:
    errors = errors_by_field(slurm_cluster(partitions={"train": ["h100", "a100"]}))
    assert errors["scheduler.partitions.train"] == "a100 not among node_groups (h100)"


def test_a_partition_over_two_rdma_required_groups_is_refused() -> None:
    cluster = slurm_cluster(partitions={"train": ["h100", "h100b"]})
    second_group(cluster, "h100b")
    message = errors_by_field(cluster)["scheduler.partitions.train"]
    assert "h100, h100b are rdma: required groups" in message


def test_rdma_required_groups_in_their_own_partitions_resolve() -> None:
    cluster = slurm_cluster(partitions={"a": ["h100"], "b": ["h100b"]})
    second_group(cluster, "h100b")
    assert resolve_cluster(cluster).spec.scheduler.partitions == {"a": ["h100"], "b": ["h100b"]}


@pytest.mark.parametrize(("stack", "default"), [("aws-train-p5", "m7i.xlarge"),
                                                ("azure-train-ndh100", "Standard_D4s_v5"),
                                                ("alicloud-train-ebmgn8v", "ecs.g7.xlarge")])
def test_a_head_node_without_a_type_takes_the_catalogs_default_cpu_type(stack: str, default: str) -> None:
    cluster = slurm_cluster(stack)
    cluster["scheduler"]["head_node"] = {"disk_gb": 100}
    assert head_node_type(resolve_cluster(cluster)) == default


def test_a_head_node_without_a_type_is_refused_where_the_catalog_has_no_default(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Catalog, "system_type", lambda self, cloud, name: None)
    cluster = slurm_cluster()
    cluster["scheduler"]["head_node"] = {"disk_gb": 100}
    assert "no CPU type of aws to default to" in errors_by_field(cluster)["scheduler.head_node.instance_type"]


def test_slurm_on_aws_with_a_brought_node_security_group_is_refused() -> None:
    cluster = slurm_cluster("aws-train-p5")
    cluster["network"] = {"vpc_id": "vpc-0123456789abcdef0", "subnet_ids": ["subnet-0123456789abcdef0"],
                          "security_group_id": "sg-0123456789abcdef0", "zones": ["us-east-1a"], "admin_cidrs": []}
    assert "leave security_group_id unset" in errors_by_field(cluster)["network.security_group_id"]


def test_a_gpu_type_as_head_node_is_refused() -> None:
    cluster = slurm_cluster(head_node={"instance_type": "p5.48xlarge"})
    assert "is a GPU type" in errors_by_field(cluster)["scheduler.head_node.instance_type"]


def test_a_head_node_zone_outside_the_network_is_refused() -> None:
    cluster = slurm_cluster(head_node={"instance_type": "m7i.xlarge", "zone": "us-east-1f"})
    assert errors_by_field(cluster)["scheduler.head_node.zone"] == "us-east-1f is not one of network.zones (us-east-1a)"


@pytest.mark.parametrize(("scheduler", "words"), [
    ({"partitions": {"Train": ["h100"]}}, "scheduler.partitions.Train"),
    ({"partitions": {"train": []}}, "scheduler.partitions.train"),
    ({"suspend_after_minutes": 0}, "scheduler.suspend_after_minutes"),
    ({"head_node": {"instance_type": "m7i.xlarge", "disk_gb": 10}}, "scheduler.head_node.disk_gb"),
])
def test_bad_slurm_values_exit_2_naming_the_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str], scheduler: dict[str, object],
                                                  words: str) -> None:
    write_stack(tmp_path, "slurm", slurm_cluster(**scheduler))
    assert run_main(monkeypatch, "plan", "--stacks-dir", str(tmp_path), "--stack", "slurm") == 2
    assert words in capsys.readouterr().err


def test_mig_under_slurm_is_taken() -> None:
    # MIG devices are Slurm GRES (components/slurm/gres_conf.py): no field of the group is refused.
    cluster = slurm_cluster("aws-train-p5")
    cluster["node_groups"][0].update(rdma="off", gpu_sharing={"mode": "mig", "mig_profile": "all-1g.10gb"})
    group = resolve_cluster(cluster).groups[0]  # SpecInvalid on today's refusal
    assert group.spec.gpu_sharing.mig_profile == "all-1g.10gb"
