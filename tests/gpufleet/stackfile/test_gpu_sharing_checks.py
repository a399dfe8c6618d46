"""`node_groups[].gpu_sharing`: the model's own rules and the checks against the catalog's MIG facts and the
group's fabric. Each refusal is exit 2 naming the field, through the CLI as well as resolve_cluster."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from conftest import read_cluster, write_stack
from stack_errors import errors_by_field
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile import sharing_checks


@pytest.fixture
def on_kubernetes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cluster's scheduler is Kubernetes (the stack model's `scheduler` lands with the EKS work)."""
    monkeypatch.setattr(sharing_checks, "_scheduler_kind", lambda cluster: "kubernetes")


def _with(stack: str, **group: Any) -> dict[str, Any]:
    cluster = copy.deepcopy(read_cluster(stack))
    cluster["node_groups"][0].update(group)
    return cluster


def _a100(**group: Any) -> dict[str, Any]:
    """azure-infer-a100: one A100 80 GB type without InfiniBand (rdma: off)."""
    return _with("azure-infer-a100", **group)


def test_whole_gpus_by_default() -> None:
    group = resolve_cluster(read_cluster("aws-train-p5")).groups[0]
    assert group.spec.gpu_sharing.mode == "none"


def test_mig_on_a100_without_rdma_resolves() -> None:
    group = resolve_cluster(_a100(gpu_sharing={"mode": "mig", "mig_profile": "all-1g.10gb"})).groups[0]
    assert group.spec.gpu_sharing.mig_profile == "all-1g.10gb"


def test_mig_on_an_rdma_group_is_refused() -> None:
    errors = errors_by_field(_with("aws-train-p5", gpu_sharing={"mode": "mig", "mig_profile": "all-1g.10gb"}))
    assert list(errors) == ["node_groups[0].gpu_sharing.mode"]
    assert "NCCL does not run over MIG" in errors["node_groups[0].gpu_sharing.mode"]
    assert "rdma: off" in errors["node_groups[0].gpu_sharing.mode"]


def test_mig_on_p5_with_rdma_off_resolves() -> None:
    cluster = _with("aws-train-p5", rdma="off", gpu_sharing={"mode": "mig", "mig_profile": "all-balanced"})
    assert resolve_cluster(cluster).groups[0].rdma is False


def test_mig_on_l40s_is_refused() -> None:
    errors = errors_by_field(_with("aws-infer-g6e", rdma="off",
                                   gpu_sharing={"mode": "mig", "mig_profile": "all-1g.10gb"}))
    assert list(errors) == ["node_groups[0].instance_types[0]"]
    assert "g6e.48xlarge's L40S (48 GB) does not support MIG" in errors["node_groups[0].instance_types[0]"]


def test_a_profile_the_gpu_lacks_is_refused_with_the_ones_it_offers() -> None:
    # 1g.5gb is an A100 40 GB profile; the NC A100 v4 has the 80 GB A100.
    errors = errors_by_field(_a100(gpu_sharing={"mode": "mig", "mig_profile": "all-1g.5gb"}))
    message = errors["node_groups[0].gpu_sharing.mig_profile"]
    assert "does not offer all-1g.5gb" in message and "all-1g.10gb" in message and "all-balanced" in message


def test_a_fallback_without_mig_is_refused() -> None:
    cluster = _with("aws-train-p5", rdma="off", instance_types=["p5.48xlarge", "g6e.48xlarge"],
                    gpu_sharing={"mode": "mig", "mig_profile": "all-1g.10gb"})
    errors = errors_by_field(cluster)
    assert list(errors) == ["node_groups[0].instance_types[1]"]


def test_a_fallback_that_lacks_the_profile_is_refused() -> None:
    # p4d's A100 40 GB has no all-7g.80gb.
    cluster = _with("aws-train-p5", rdma="off", instance_types=["p5.48xlarge", "p4d.24xlarge"],
                    gpu_sharing={"mode": "mig", "mig_profile": "all-7g.80gb"})
    message = errors_by_field(cluster)["node_groups[0].gpu_sharing.mig_profile"]
    assert "p4d.24xlarge's A100 (40 GB) does not offer all-7g.80gb" in message and "(instance_types[1])" in message


def test_types_whose_devices_differ_are_refused() -> None:
    # all-balanced exists on both, but makes 3g.40gb devices on the H100 80 GB and 3g.20gb on the A100 40 GB.
    cluster = _with("aws-train-p5", rdma="off", instance_types=["p5.48xlarge", "p4d.24xlarge"],
                    gpu_sharing={"mode": "mig", "mig_profile": "all-balanced"})
    message = errors_by_field(cluster)["node_groups[0].gpu_sharing.mig_profile"]
    assert "different MIG devices" in message and "3g.20gb" in message and "3g.40gb" in message


def test_types_with_the_same_devices_share_a_group() -> None:
    # H100 80 GB and A100 80 GB make the same devices for every 80 GB profile.
    cluster = _with("aws-train-p5", rdma="off", instance_types=["p5.48xlarge", "p4de.24xlarge"],
                    gpu_sharing={"mode": "mig", "mig_profile": "all-balanced"})
    assert len(resolve_cluster(cluster).groups[0].types) == 2


def test_mig_is_not_built_on_alibaba_cloud_yet() -> None:
    cluster = copy.deepcopy(read_cluster("alicloud-infer-gn7i"))
    cluster["node_groups"][0].update(instance_types=["ecs.gn7e-c16g1.32xlarge"], rdma="off",
                                     gpu_sharing={"mode": "mig", "mig_profile": "all-1g.10gb"})
    errors = errors_by_field(cluster)
    assert list(errors) == ["node_groups[0].gpu_sharing.mode"]
    assert "not built on alicloud yet" in errors["node_groups[0].gpu_sharing.mode"]


def test_time_slicing_on_an_rdma_group_is_refused(on_kubernetes) -> None:
    errors = errors_by_field(_with("aws-train-p5", gpu_sharing={"mode": "time-slicing", "replicas": 4}))
    assert list(errors) == ["node_groups[0].gpu_sharing.mode"]
    assert "time-slicing on a group that uses RDMA (efa)" in errors["node_groups[0].gpu_sharing.mode"]


def test_time_slicing_without_rdma_on_kubernetes_resolves(on_kubernetes) -> None:
    cluster = _with("aws-infer-g6e", rdma="off", gpu_sharing={"mode": "time-slicing", "replicas": 4})
    assert resolve_cluster(cluster).groups[0].spec.gpu_sharing.replicas == 4


def test_time_slicing_needs_kubernetes() -> None:
    errors = errors_by_field(_with("aws-infer-g6e", rdma="off", gpu_sharing={"mode": "time-slicing", "replicas": 4}))
    assert list(errors) == ["node_groups[0].gpu_sharing.mode"]
    assert "scheduler.kind: kubernetes" in errors["node_groups[0].gpu_sharing.mode"]


@pytest.mark.parametrize(("sharing", "words"), [
    ({"mode": "mig"}, "needs mig_profile"),
    ({"mode": "time-slicing"}, "needs replicas"),
    ({"mode": "none", "mig_profile": "all-1g.10gb"}, "mig_profile applies to mode mig only"),
    ({"mode": "mig", "mig_profile": "all-1g.10gb", "replicas": 2}, "replicas applies to mode time-slicing only"),
])
def test_settings_belong_to_their_mode(sharing: dict[str, Any], words: str) -> None:
    errors = errors_by_field(_a100(gpu_sharing=sharing))
    assert words in errors["node_groups[0].gpu_sharing"]


@pytest.mark.parametrize(("sharing", "path"), [
    ({"mode": "time-slicing", "replicas": 1}, "node_groups[0].gpu_sharing.replicas"),
    ({"mode": "mig", "mig_profile": "1g.10gb"}, "node_groups[0].gpu_sharing.mig_profile"),
    ({"mode": "mps"}, "node_groups[0].gpu_sharing.mode"),
])
def test_bad_values_name_their_field(sharing: dict[str, Any], path: str) -> None:
    assert path in errors_by_field(_a100(gpu_sharing=sharing))


@pytest.mark.parametrize(("stack", "group", "field", "words"), [
    ("aws-train-p5", {"gpu_sharing": {"mode": "mig", "mig_profile": "all-1g.10gb"}},
     "node_groups[0].gpu_sharing.mode", "NCCL does not run over MIG"),
    ("aws-infer-g6e", {"rdma": "off", "gpu_sharing": {"mode": "mig", "mig_profile": "all-1g.10gb"}},
     "node_groups[0].instance_types[0]", "does not support MIG"),
    ("azure-infer-a100", {"gpu_sharing": {"mode": "mig", "mig_profile": "all-3g.20gb"}},
     "node_groups[0].gpu_sharing.mig_profile", "does not offer all-3g.20gb"),
    ("aws-train-p5", {"gpu_sharing": {"mode": "time-slicing", "replicas": 4}},
     "node_groups[0].gpu_sharing.mode", "time-slicing on a group that uses RDMA"),
])
def test_plan_exits_2_naming_the_field(stacks_dir, stack: str, group: dict[str, Any], field: str, words: str) -> None:
    write_stack(stacks_dir, "shared", _with(stack, **group))
    result = CliRunner().invoke(app, ["plan", "--stack", "shared", "--stacks-dir", str(stacks_dir)])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert field in text and words in text
