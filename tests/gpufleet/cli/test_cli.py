"""The `gpufleet` command: exit codes, messages, JSON shapes."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import libyaml_files
from conftest import SHIPPED_STACKS, read_cluster, write_stack
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.stackfile import stack_names

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args))


def test_help_on_every_command() -> None:
    for command in (["plan"], ["catalog"], ["schema"], ["fork"], ["images", "check"], ["images", "pin"], ["policies"],
                    ["policy-config"], ["diff"]):
        result = invoke(*command, "--help")
        assert result.exit_code == 0 and "Usage" in result.output, command


def test_catalog_json_lists_p5_with_32_efa() -> None:
    result = invoke("catalog", "--cloud", "aws", "--format", "json")
    assert result.exit_code == 0
    rows = {row["name"]: row for row in json.loads(result.output)}
    assert rows["p5.48xlarge"]["fabric"] == {"kind": "efa", "interfaces": 32, "gbps": 3200}
    assert {row["cloud"] for row in rows.values()} == {"aws"}


def test_catalog_filters_by_gpu() -> None:
    rows = json.loads(invoke("catalog", "--gpu", "H100", "--format", "json").output)
    assert rows and {r["gpu"]["model"] for r in rows} == {"H100"}


def test_catalog_unknown_cloud_is_usage_error() -> None:
    result = invoke("catalog", "--cloud", "gcp")
    assert result.exit_code == 2 and "--cloud must be one of aws, azure, alicloud" in result.stderr


def test_schema_is_json_schema() -> None:
    schema = json.loads(invoke("schema").output)
    assert schema["title"] == "gpufleet:cluster"
    chosen = {rule["if"]["properties"]["cloud"]["const"]: rule["then"]["$ref"].rsplit("/", 1)[1]
              for rule in schema["allOf"] if "properties" in rule["if"]}
    assert chosen == {"aws": "AwsClusterSpec", "azure": "AzureClusterSpec", "alicloud": "AlicloudClusterSpec"}
    branches = {name: schema["$defs"][name] for name in chosen.values()}
    for branch in branches.values():
        # `image` may be left out: an EKS stack derives it from scheduler.version.
        assert {"name", "cloud", "region", "network", "node_groups"} <= set(branch["required"])


def test_plan_json_contract(stacks_dir: Path) -> None:
    result = invoke("plan", "--stack", "aws-train-p5", "--format", "json", "--stacks-dir", str(stacks_dir))
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    assert (plan["stack"], plan["cloud"], plan["region"]) == ("aws-train-p5", "aws", "us-east-1")
    assert set(plan["resources"][0]) == {"urn", "type", "name", "parent", "depends_on", "inputs",
                                          "property_dependencies", "protect", "ignore_changes"}
    assert plan["summary"]["gpus"] == {"min": 0, "desired": 16, "max": 128}
    assert plan["summary"]["hourly_usd"]["max_on_demand"] == 880.64
    assert plan["summary"]["node_groups"][0]["interfaces"] == 32
    # The shipped lock has no baked image yet: that is advisory, reported, and the plan exits 0.
    assert {v["policy"] for v in plan["policies"]["violations"]} <= {"aws-image-unbaked"}
    assert all(v["level"] == "advisory" for v in plan["policies"]["violations"])


def test_plan_is_byte_identical(stacks_dir: Path) -> None:
    args = ("plan", "--stack", "aws-infer-g6e", "--format", "json", "--stacks-dir", str(stacks_dir))
    assert invoke(*args).output == invoke(*args).output


def test_plan_table(stacks_dir: Path) -> None:
    result = invoke("plan", "--stack", "aws-train-p5", "--stacks-dir", str(stacks_dir))
    assert result.exit_code == 0
    assert "aws:ec2/launchTemplate:LaunchTemplate" in result.output and "880.64" in result.output


def test_size_out_of_order_exits_2_naming_the_field(tmp_path: Path) -> None:
    cluster = copy.deepcopy(read_cluster("aws-train-p5"))
    cluster["node_groups"][0]["size"] = {"min": 5, "desired": 2, "max": 1}
    result = invoke("plan", "--stack-file", str(write_stack(tmp_path, "bad", cluster)))
    assert result.exit_code == 2
    assert "node_groups[0].size: needs min <= desired <= max" in result.stderr
    assert "Traceback" not in result.output + result.stderr


def test_unknown_image_profile_exits_2(tmp_path: Path) -> None:
    cluster = copy.deepcopy(read_cluster("aws-train-p5"))
    cluster["image"] = "cuda12.8-r570"
    result = invoke("plan", "--stack-file", str(write_stack(tmp_path, "bad", cluster)))
    assert result.exit_code == 2 and "image: unknown image profile 'cuda12.8-r570'" in result.stderr


def test_missing_stack_exits_2(stacks_dir: Path) -> None:
    result = invoke("plan", "--stack", "nope", "--stacks-dir", str(stacks_dir))
    assert result.exit_code == 2 and "no stack 'nope'" in result.stderr


def test_missing_stack_file_exits_2(tmp_path: Path) -> None:
    result = invoke("plan", "--stack-file", str(tmp_path / "Pulumi.gone.yaml"))
    assert result.exit_code == 2 and "does not exist" in result.stderr


def test_plan_needs_one_target() -> None:
    assert invoke("plan").exit_code == 2


def test_invalid_combinations_exit_2(tmp_path: Path) -> None:
    cases = {
        "node_groups[0].zone: an RDMA group must sit in exactly one zone": {"zones": ["us-east-1a", "us-east-1b"]},
        "node_groups[0].reservation_id: capacity capacity-block needs": {"capacity": "capacity-block"},
        "network.cidr: 10.0.0.0/22 is too small: the private subnet in us-east-1a": {"cidr": "10.0.0.0/22"},
    }
    for message, change in cases.items():
        cluster = copy.deepcopy(read_cluster("aws-train-p5"))
        if "zones" in change or "cidr" in change:
            cluster["network"].update(change)
            cluster["node_groups"][0]["size"]["max"] = 300
            cluster["budget"]["max_hourly_usd"] = 20000
        else:
            cluster["node_groups"][0].update(change)
        result = invoke("plan", "--stack-file", str(write_stack(tmp_path, "bad", cluster)))
        assert result.exit_code == 2 and message in result.stderr, (message, result.stderr)


def test_ssh_open_to_world_exits_2(tmp_path: Path) -> None:
    # The spec judges the ranges before any resource (test_address_ranges.py); the exposure rules judge
    # what reaches the security groups by other ways.
    cluster = copy.deepcopy(read_cluster("aws-train-p5"))
    cluster["network"]["admin_cidrs"] = ["0.0.0.0/0"]
    result = invoke("plan", "--stack-file", str(write_stack(tmp_path, "open", cluster)), "--format", "json")
    assert result.exit_code == 2 and "network.admin_cidrs: " in result.stderr
    assert "0.0.0.0/0 open SSH to" in result.stderr


def test_over_budget_exits_1(tmp_path: Path) -> None:
    cluster = copy.deepcopy(read_cluster("aws-train-p5"))
    cluster["budget"]["max_hourly_usd"] = 100
    result = invoke("plan", "--stack-file", str(write_stack(tmp_path, "rich", cluster)), "--format", "json")
    assert result.exit_code == 1
    violations = json.loads(result.output)["policies"]["violations"]
    assert [v["policy"] for v in violations if v["level"] == "mandatory"] == ["hourly-budget"]


def test_plan_all_exits_0_on_shipped_stacks(shipped_plans_in_the_cli: None) -> None:
    # In this process (--jobs 1): tests/gpufleet/plan/test_plan_batch.py holds the worker path to the same outcomes.
    # The shipped folder itself (planning writes nothing), so each stack's plan is the one this process made already.
    result = invoke("plan", "--all", "--jobs", "1", "--format", "json", "--stacks-dir", str(SHIPPED_STACKS))
    assert result.exit_code == 0, result.output
    lines = json.loads(result.output)
    assert [line["stack"] for line in lines] == stack_names(SHIPPED_STACKS)  # every cloud's, in name order
    assert all(line["exit"] == 0 for line in lines)


def test_plan_all_reports_worst_exit(p5_stacks_dir: Path) -> None:
    cluster = copy.deepcopy(read_cluster("aws-train-p5"))
    cluster["node_groups"][0]["size"] = {"min": 5, "desired": 2, "max": 1}
    write_stack(p5_stacks_dir, "broken", cluster)
    result = invoke("plan", "--all", "--jobs", "1", "--stacks-dir", str(p5_stacks_dir))
    assert result.exit_code == 2 and "broken" in result.output


def test_fork_writes_a_valid_stack(stacks_dir: Path) -> None:
    result = invoke("fork", "aws-train-p5", "team-a", "--set", "name=team-a",
                    "--set", "node_groups[0].size.max=32", "--set", "budget.max_hourly_usd=1800",
                    "--stacks-dir", str(stacks_dir))
    assert result.exit_code == 0, result.output + result.stderr
    written = libyaml_files.load((stacks_dir / "Pulumi.team-a.yaml").read_text())["config"]
    assert written["aws:region"] == "us-east-1"
    cluster = written["gpufleet:cluster"]
    assert cluster["extends"] == "aws-train-p5" and cluster["name"] == "team-a"
    assert cluster["node_groups"][0]["size"]["max"] == 32
    assert cluster["node_groups"][0]["instance_types"] == ["p5.48xlarge"]
    assert "gpufleet plan --stack team-a" in result.output


def test_fork_refuses_invalid_result(stacks_dir: Path) -> None:
    result = invoke("fork", "aws-train-p5", "bad", "--set", "node_groups[0].size.min=99",
                    "--stacks-dir", str(stacks_dir))
    assert result.exit_code == 2 and "node_groups[0].size" in result.stderr
    assert not (stacks_dir / "Pulumi.bad.yaml").exists()


def test_images_check_on_shipped_lock_passes_noting_the_driver_ack_installs() -> None:
    """Every download of the shipped lock is verified (eRDMA's sha256, the FSx key's fingerprint pinned; enroot's
    .debs by the digest GitHub lists for their release, a fact `lock resolve` reads, noted until then) and the ACK
    stacks name cuda12.8-r570-ack, whose driver ACK's list names: its R570 branch is a note."""
    result = invoke("images", "check", "--format", "json", "--on", "2026-11-28")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["problems"] == []
    assert "profiles.cuda12.8-r580.slurm.enroot.sha256" in {n["field"] for n in report["notes"]}
    assert [(n["field"], n["message"].split(":")[0]) for n in report["notes"] if n["profile"] == "cuda12.8-r570-ack"] \
        == [("driver", "driver 570.169 is on branch R570, out of the support matrix")]


def test_images_check_fails_on_fabric_manager_drift(tmp_path: Path) -> None:
    from gpufleet.lock import DEFAULT_LOCK_PATH

    lock = libyaml_files.load(DEFAULT_LOCK_PATH.read_text())
    lock["profiles"]["cuda12.8-r580"]["fabric_manager"] = "580.82.07"
    path = tmp_path / "lock.yaml"
    path.write_text(libyaml_files.dump(lock))
    result = invoke("images", "check", "--lock", str(path), "--format", "json")
    assert result.exit_code == 1
    problems = json.loads(result.output)["problems"]
    assert any(p["profile"] == "cuda12.8-r580" and p["field"] == "fabric_manager" for p in problems)


def test_images_check_bad_date_is_usage_error() -> None:
    result = invoke("images", "check", "--on", "tomorrow")
    assert result.exit_code == 2 and "--on must be a date" in result.stderr


def test_policy_config_carries_stack_settings(stacks_dir: Path) -> None:
    result = invoke("policy-config", "--stack", "aws-train-p5", "--stacks-dir", str(stacks_dir))
    assert result.exit_code == 0
    config = json.loads(result.output)
    assert config["hourly-budget"] == {
        "maxHourlyUsd": 900, "region": "us-east-1",
        "nodeGroups": [{"name": "h100", "cloud": "aws", "instanceTypes": ["p5.48xlarge"], "maxSize": 16}],
    }
    assert config["aws-efa-interface-count"] == {"rdmaInUseInstanceTypes": ["p5.48xlarge"]}
    assert config["image-lock-valid"]["profile"] == "cuda12.8-r580"


def test_policies_json_lists_at_least_20_rules() -> None:
    rules = json.loads(invoke("policies", "--format", "json").output)
    assert len(rules) >= 20
    assert {"aws-imdsv2-required", "hourly-budget", "required-tags"} <= {r["name"] for r in rules}
