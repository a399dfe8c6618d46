"""The node side of a training group on AWS, as the engine records it: the boot check's retries
inside the launch hook's hold, checkpoint writes and customer-key reads on the node role, and a launch template
change that does not roll running training nodes."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import libyaml_files
import pytest
from bootstrap_node import sent_user_data
from conftest import of_type, read_cluster, write_stack
from conftest import shipped_plan as shipped
from typer.testing import CliRunner

from components.clouds.aws.lifecycle import COMPLETE_SECONDS
from components.clouds.hooks import BOOT_SECONDS, CHECK_RUN_SECONDS
from gpufleet import cli
from gpufleet.plan.planner import PlanResult, plan_stack

LT = "aws:ec2/launchTemplate:LaunchTemplate"
HOOK = "aws:autoscaling/lifecycleHook:LifecycleHook"


def variant(tmp_path: Path, stack: str, change: Any) -> PlanResult:
    cluster = copy.deepcopy(read_cluster(stack))
    change(cluster)
    return plan_stack(write_stack(tmp_path, "variant", cluster))


def settings(template: Any) -> dict[str, str]:
    document = libyaml_files.load(sent_user_data(template.inputs["userData"]))
    env = next(f["content"] for f in document["write_files"] if f["path"] == "/etc/gpufleet/bootstrap.env")
    return dict(line.split("=", 1) for line in env.splitlines() if not line.startswith("#"))


def test_the_boot_checks_retries_end_inside_the_launch_hooks_hold() -> None:
    plan = shipped("aws-train-p5")
    (launch,) = [h for h in of_type(plan, HOOK) if h.inputs["lifecycleTransition"].endswith("_LAUNCHING")]
    hold = launch.inputs["heartbeatTimeout"]
    for template in of_type(plan, LT):
        retry = int(settings(template)["GPUFLEET_NODECHECK_RETRY_SECONDS"])
        # Boot, the retries, the last check run and the completion call all fit the hold the group registered.
        assert retry > 0 and BOOT_SECONDS + retry + CHECK_RUN_SECONDS + COMPLETE_SECONDS <= hold == 900


def test_a_fleet_group_without_a_launch_hook_checks_once(tmp_path: Path) -> None:
    def fleet(cluster: dict[str, Any]) -> None:
        cluster["node_groups"][0].update(provisioner="fleet", idle=None)

    plan = variant(tmp_path, "aws-infer-g6e", fleet)
    assert not of_type(plan, HOOK)
    assert {settings(t)["GPUFLEET_NODECHECK_RETRY_SECONDS"] for t in of_type(plan, LT)} == {"0"}


@pytest.mark.parametrize(("grace", "delay"), [(300, 300), (30, 120)])
def test_a_rebalanced_spot_fleet_node_ends_after_the_checkpoint_grace(tmp_path: Path, grace: int, delay: int) -> None:
    def spot_fleet(cluster: dict[str, Any]) -> None:
        cluster["bootstrap"] = {"checkpoint_grace_seconds": grace}
        cluster["node_groups"][0].update(provisioner="fleet", capacity="spot", on_demand_base=0, idle=None)

    (fleet,) = of_type(variant(tmp_path, "aws-infer-g6e", spot_fleet), "aws:ec2/fleet:Fleet")
    rebalance = fleet.inputs["spotOptions"]["maintenanceStrategies"]["capacityRebalance"]
    # `launch` leaves the warned node running (and billing) beside its replacement; EC2's least delay is 120 s.
    assert rebalance == {"replacementStrategy": "launch-before-terminate", "terminationDelay": delay}


# Checkpoints and customer-key buckets

READ, WRITE = "s3://corp-datasets/train", "s3://corp-checkpoints/runs/llm"
KEY = "arn:aws:kms:us-east-1:210987654321:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def with_s3(cluster: dict[str, Any]) -> None:
    cluster["identity"] = {"s3_read_prefixes": [READ], "s3_write_prefixes": [WRITE], "s3_kms_keys": [KEY]}


def node_statements(plan: PlanResult) -> dict[str, dict[str, Any]]:
    (policy,) = [r for r in of_type(plan, "aws:iam/rolePolicy:RolePolicy") if r.name.endswith("-node")]
    return {s["Sid"]: s for s in json.loads(policy.inputs["policy"])["Statement"]}


def test_nodes_may_write_checkpoints_under_the_write_prefixes_only(tmp_path: Path) -> None:
    statements = node_statements(variant(tmp_path, "aws-train-p5", with_s3))
    write = statements["WriteObjects0"]
    assert write["Resource"] == "arn:aws:s3:::corp-checkpoints/runs/llm/*"
    assert sorted(write["Action"]) == ["s3:AbortMultipartUpload", "s3:ListMultipartUploadParts", "s3:PutObject"]
    listing = statements["ListWritePrefix0"]
    assert listing["Action"] == ["s3:ListBucket"] and listing["Resource"] == "arn:aws:s3:::corp-checkpoints"
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["runs/llm/*", "runs/llm"]}}
    # Reading stays read-only; nothing deletes.
    assert statements["ReadObjects0"]["Action"] == ["s3:GetObject"]
    actions = {a for s in statements.values() for a in s["Action"]}
    assert not {a for a in actions if a.startswith("s3:Delete")}


def test_bucket_keys_are_usable_through_s3_of_the_region_only(tmp_path: Path) -> None:
    keys = node_statements(variant(tmp_path, "aws-train-p5", with_s3))["BucketKeysThroughS3"]
    assert keys["Action"] == ["kms:Decrypt", "kms:GenerateDataKey"] and keys["Resource"] == [KEY]
    assert keys["Condition"] == {"StringEquals": {"kms:ViaService": "s3.us-east-1.amazonaws.com"}}
    # Without keys, no KMS grant at all.
    assert not [s for s in node_statements(shipped("aws-train-p5")).values() if "kms:Decrypt" in s["Action"]]


@pytest.mark.parametrize(
    ("identity", "message"),
    [
        ("{s3_write_prefixes: ['s3://corp-*/ckpt']}", "identity.s3_write_prefixes[0]: 's3://corp-*/ckpt' "
                                                       "names buckets by a pattern"),
        ("{s3_write_prefixes: ['corp-ckpt/runs']}", "identity.s3_write_prefixes[0]: 'corp-ckpt/runs' is "
                                                     "not s3://BUCKET/PREFIX"),
        ("{s3_read_prefixes: ['s3://corp/runs/*']}", "identity.s3_read_prefixes: 's3://corp/runs/*': a "
                                                      "prefix takes no wildcard"),
        ("{s3_kms_keys: ['arn:aws:kms:us-east-1:210987654321:alias/ckpt']}",
         "identity.s3_kms_keys: 'arn:aws:kms:us-east-1:210987654321:alias/ckpt': give key ARNs"),
        (f"{{s3_kms_keys: ['{KEY.replace('us-east-1', 'eu-west-1')}']}}",
         "identity.s3_kms_keys[0]: 'arn:aws:kms:eu-west-1:210987654321:key/1234abcd-12ab-34cd-56ef-1234567890ab' is "
         "a key in eu-west-1"),
        ("{instance_profile_arn: 'arn:aws:iam::210987654321:instance-profile/gpu', s3_write_prefixes: ['s3://ckpt/r']}",
         "identity.s3_write_prefixes: granted on the node role gpufleet creates"),
    ],
)
def test_s3_settings_the_policy_cannot_scope_exit_2_naming_the_field(stacks_dir: Path, identity: str,
                                                                    message: str) -> None:
    path = stacks_dir / "Pulumi.bad.yaml"
    cluster = f"{{extends: aws-train-p5, identity: {identity}}}"
    path.write_text(f"config:\n  aws:region: us-east-1\n  gpufleet:cluster: {cluster}\n")
    result = CliRunner().invoke(cli.app, ["plan", "--stack", "bad", "--stacks-dir", str(stacks_dir)])
    assert result.exit_code == 2 and message in " ".join(result.output.split()), result.output
    assert "Traceback" not in result.output


# A new pinned image and the jobs running on the old one

ASG = "aws:autoscaling/group:Group"


def test_a_launch_template_change_rolls_no_running_node_by_default() -> None:
    # The provider starts a refresh on every launch template change when the block is set; the shipped groups
    # (training on p5 with EFA, inference on g6e) leave it unset.
    for stack in ("aws-train-p5", "aws-infer-g6e"):
        for group in of_type(shipped(stack), ASG):
            assert group.inputs.get("instanceRefresh") is None, stack


def test_rolling_is_a_per_group_opt_in(tmp_path: Path) -> None:
    def rolling(cluster: dict[str, Any]) -> None:
        cluster["node_groups"][0]["instance_refresh"] = "rolling"

    (group,) = of_type(variant(tmp_path, "aws-infer-g6e", rolling), ASG)
    assert group.inputs["instanceRefresh"] == {"strategy": "Rolling", "preferences": {"minHealthyPercentage": 90}}


def test_rolling_on_an_ec2_fleet_exits_2_naming_the_field(stacks_dir: Path) -> None:
    groups = "[{name: l40s, instance_types: [g6e.48xlarge], size: {min: 0, desired: 1, max: 2}, " \
             "provisioner: fleet, instance_refresh: rolling}]"
    (stacks_dir / "Pulumi.bad.yaml").write_text(
        f"config:\n  aws:region: us-east-1\n  gpufleet:cluster: {{extends: aws-infer-g6e, node_groups: {groups}}}\n"
    )
    result = CliRunner().invoke(cli.app, ["plan", "--stack", "bad", "--stacks-dir", str(stacks_dir)])
    assert result.exit_code == 2
    assert "node_groups[0].instance_refresh: an EC2 Fleet has no instance refresh" in " ".join(result.output.split())
