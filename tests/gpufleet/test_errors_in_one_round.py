"""A stack file's errors come in one round: fields that fail the model, the cross-field checks on the parts that
validated (in the same node group too), and the provider's region key, all in the first run, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet import cli


def _plan(stacks_dir: Path, name: str, provider: dict[str, str], cluster: dict[str, object]) -> tuple[int, str]:
    config = {**provider, "gpufleet:cluster": cluster}
    (stacks_dir / f"Pulumi.{name}.yaml").write_text(json.dumps({"config": config}))
    result = CliRunner().invoke(cli.app, ["plan", "--stack", name, "--stacks-dir", str(stacks_dir)])
    return result.exit_code, result.stderr


# Each file: errors of the model and of the checks in one node group, another section's model error, and a provider
# region that differs from the cluster's.
CRAFTED = {
    "aws": ({"aws:region": "us-west-2"}, {
        "extends": "aws-train-p5",
        "network": {"zones": ["us-east-1a"], "vpc_id": "vpc-zz"},
        "node_groups": [{"name": "h100", "instance_types": ["p5.48xlarge"], "size": {"min": 0, "desired": 2, "max": 16},
                         "rdma": "sometimes", "zone": "us-east-1z"}],
    }, ["network.vpc_id", "node_groups[0].rdma", "node_groups[0].zone", "aws:region"]),
    "azure": ({"azure-native:location": "westus"}, {
        "extends": "azure-train-ndh100",
        "tags": {"team": 5},
        "node_groups": [{"name": "h100", "instance_types": ["Standard_ND96isr_H100_v5"],
                         "size": {"min": 0, "desired": 1, "max": 2}, "rdma": "sometimes", "zone": "3"}],
    }, ["tags", "node_groups[0].rdma", "node_groups[0].zone", "azure-native:location"]),
    "alicloud": ({"alicloud:region": "cn-beijing"}, {
        "extends": "alicloud-train-ebmgn8v",
        "tags": {"team": 5},
        "node_groups": [{"name": "h20", "instance_types": ["ecs.ebmgn8v.48xlarge"],
                         "size": {"min": 0, "desired": 1, "max": 2}, "rdma": "sometimes", "zone": "cn-wulanchabu-z"}],
    }, ["tags", "node_groups[0].rdma", "node_groups[0].zone", "alicloud:region"]),
    # A group without its required instance_types is left out whole: the next group's check keeps its index.
    "aws, a required field missing": ({"aws:region": "us-east-1"}, {
        "extends": "aws-train-p5",
        "storage": {"root_volume_gb": "lots"},
        "node_groups": [{"name": "h100", "size": {"min": 0, "desired": 2, "max": 16}},
                        {"name": "h100b", "instance_types": ["p5.48xlarge"],
                         "size": {"min": 0, "desired": 2, "max": 1}}],
    }, ["storage.root_volume_gb", "node_groups[0].instance_types", "node_groups[1].size"]),
}


@pytest.mark.parametrize("cloud", sorted(CRAFTED))
def test_every_error_of_a_file_in_one_round(stacks_dir: Path, cloud: str) -> None:
    provider, cluster, paths = CRAFTED[cloud]
    code, err = _plan(stacks_dir, "crafted", provider, cluster)
    assert code == 2, err
    named = {line.strip().partition(": ")[0] for line in err.splitlines() if line.startswith("  ")}
    assert set(paths) <= named, err


def test_a_check_that_would_judge_the_left_out_field_is_not_reported(stacks_dir: Path) -> None:
    # rdma fails the model; left out it reads `auto`, under which p5 runs RDMA over two zones: a finding about the
    # value the file did not give would be false.
    cluster = {"extends": "aws-train-p5", "network": {"zones": ["us-east-1a", "us-east-1b"]},
               "storage": {"shared": None},
               "node_groups": [{"name": "h100", "instance_types": ["p5.48xlarge"],
                                "size": {"min": 0, "desired": 1, "max": 2}, "rdma": "sometimes"}]}
    code, err = _plan(stacks_dir, "left-out", {"aws:region": "us-east-1"}, cluster)
    assert code == 2, err
    assert "node_groups[0].rdma:" in err and "RDMA" not in err.replace("node_groups[0].rdma:", ""), err


def test_an_image_stacks_checks_run_beside_its_model_errors(stacks_dir: Path) -> None:
    (stacks_dir / "Pulumi.images-crafted.yaml").write_text(json.dumps({"config": {
        "aws:region": "us-east-1",
        "gpufleet:images": {"extends": "aws-images", "regions": ["us-east-1", "mars-9"], "tags": {"team": 5}}}}))
    result = CliRunner().invoke(cli.app, ["plan", "--stack", "images-crafted", "--stacks-dir", str(stacks_dir)])
    assert result.exit_code == 2, result.stderr
    assert "  tags: 'team': 5 is not text" in result.stderr  # the model
    assert "  regions[1]: 'mars-9' is not an AWS region name" in result.stderr  # a check of the validated spec
