"""Stack keys of the wrong shape exit 2 naming the key, through the CLI (no traceback, no exit 1 or 3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet import cli
from gpufleet.stackfile.read import read_config


def plan(tmp_path: Path, stacks_dir: Path, body: str) -> tuple[int, str]:
    path = stacks_dir / "Pulumi.bad.yaml"
    path.write_text("config:\n  aws:region: us-east-1\n" + body)
    result = CliRunner().invoke(cli.app, ["plan", "--stack", "bad", "--stacks-dir", str(stacks_dir)])
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("  gpufleet:cluster: 5\n", "gpufleet:cluster: must be a map of fields"),
        ("  gpufleet:images: [a]\n", "gpufleet:images: must be a map of fields"),
        ("  gpufleet:policy: [1]\n  gpufleet:cluster: {extends: aws-train-p5}\n",
         "gpufleet:policy: must be a map of policy names to a level"),
        ("  gpufleet:policy: {nonsense: mandatory}\n  gpufleet:cluster: {extends: aws-train-p5}\n",
         "gpufleet:policy.nonsense: no such policy in the pack"),
    ],
)
def test_wrong_shape_names_the_key(tmp_path: Path, stacks_dir: Path, body: str, message: str) -> None:
    code, output = plan(tmp_path, stacks_dir, body)
    assert code == 2 and message in output and "Traceback" not in output


def test_plan_all_without_stacks_is_usage_error(tmp_path: Path) -> None:
    for directory in (tmp_path / "absent", tmp_path):
        result = CliRunner().invoke(cli.app, ["plan", "--all", "--stacks-dir", str(directory)])
        assert result.exit_code == 2 and "--all found no Pulumi.<stack>.yaml in" in result.output


def test_plan_all_prints_a_broken_stacks_error_literally(p5_stacks_dir: Path) -> None:
    group = "{name: gx, instance_types: ['[/x]'], size: {desired: 1, max: 1}}"
    (p5_stacks_dir / "Pulumi.bad.yaml").write_text(
        f"config:\n  aws:region: us-east-1\n  gpufleet:cluster: {{extends: aws-train-p5, node_groups: [{group}]}}\n"
    )
    result = CliRunner().invoke(cli.app, ["plan", "--all", "--jobs", "1", "--stacks-dir", str(p5_stacks_dir)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "node_groups[0].instance_types[0]: unknown instance type '[/x]' for aws" in result.output


@pytest.mark.parametrize(
    ("cloud", "region", "message"),
    [
        ("aws", "us-east1", "region: 'us-east1' is not an AWS region name"),
        ("azure", "East US", "region: 'East US' is not an Azure region name"),
        ("alicloud", "cn_wulanchabu", "region: 'cn_wulanchabu' is not an Alibaba Cloud region id"),
    ],
)
def test_a_cluster_region_the_cloud_does_not_name_so_is_refused(stacks_dir: Path, cloud: str, region: str,
                                                               message: str) -> None:
    template = {"aws": "aws-train-p5", "azure": "azure-train-ndh100", "alicloud": "alicloud-train-ebmgn8v"}[cloud]
    # The child repeats the template's provider keys (they are not inherited; plan() writes aws:region), then
    # moves the cluster's region.
    keys = "".join(f"  {k}: {v}\n" for k, v in read_config(stacks_dir / f"Pulumi.{template}.yaml").items()
                   if not k.startswith("gpufleet:") and k != "aws:region")
    child = f"{keys}  gpufleet:cluster: {{extends: {template}, region: '{region}'}}\n"
    code, output = plan(stacks_dir, stacks_dir, child)
    assert code == 2 and message in " ".join(output.split())


def test_provider_region_must_equal_the_stacks_region(tmp_path: Path, stacks_dir: Path) -> None:
    path = stacks_dir / "Pulumi.elsewhere.yaml"
    path.write_text("config:\n  aws:region: eu-west-1\n  gpufleet:cluster: {extends: aws-train-p5}\n")
    result = CliRunner().invoke(cli.app, ["plan", "--stack", "elsewhere", "--stacks-dir", str(stacks_dir)])
    assert result.exit_code == 2
    assert "aws:region: is 'eu-west-1' but gpufleet:cluster.region is 'us-east-1'" in result.output


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("storage: {scratch_mount: /}", "storage.scratch_mount: '/' would cover the whole system"),
        ("storage: {scratch_mount: /a/../b}", "storage.scratch_mount: '/a/../b' must be a plain"),
        ("bootstrap: {checkpoint_hook: '   '}", "bootstrap.checkpoint_hook: must contain something other than spaces"),
        ("bootstrap: {checkpoint_hook: ''}", "bootstrap.checkpoint_hook: String should have at least 1 character"),
    ],
)
def test_values_the_pattern_admits_but_the_node_cannot_use(stacks_dir: Path, setting: str, message: str) -> None:
    code, output = plan(stacks_dir, stacks_dir, f"  gpufleet:cluster: {{extends: aws-train-p5, {setting}}}\n")
    assert code == 2 and message in " ".join(output.split())


def test_a_long_extends_chain_is_refused(stacks_dir: Path) -> None:
    previous = "aws-train-p5"
    for i in range(10):
        (stacks_dir / f"Pulumi.chain{i}.yaml").write_text(f"config:\n  gpufleet:cluster: {{extends: {previous}}}\n")
        previous = f"chain{i}"
    result = CliRunner().invoke(cli.app, ["plan", "--stack", "chain9", "--stacks-dir", str(stacks_dir)])
    assert result.exit_code == 2 and "more than 8 stacks extend one another" in result.output


def test_a_bootstrap_over_the_user_data_cap_is_an_input_error(stacks_dir: Path) -> None:
    hook = "/opt/save " + "x" * 4080  # as long as the field allows
    # Alibaba's user data is sent as written: the longest hook puts a node past its 16 KB.
    path = stacks_dir / "Pulumi.bad.yaml"
    cluster = f"{{extends: alicloud-train-ebmgn8v, bootstrap: {{checkpoint_hook: '{hook}'}}}}"
    path.write_text(f"config:\n  alicloud:region: cn-wulanchabu\n  gpufleet:cluster: {cluster}\n")
    result = CliRunner().invoke(cli.app, ["plan", "--stack", "bad", "--stacks-dir", str(stacks_dir)])
    text = " ".join(result.output.split())
    assert result.exit_code == 2 and "node_groups: user data:" in text and "16384-byte user data limit" in text
    # EC2's cap applies to the gzipped document the launch template sends: the same hook fits there.
    code, output = plan(stacks_dir, stacks_dir,
                        f"  gpufleet:cluster: {{extends: aws-train-p5, bootstrap: {{checkpoint_hook: '{hook}'}}}}\n")
    assert code == 0, output
