"""Issue 27 item 8: the node side of a training group on AWS, as the engine records it: the boot check's retries
inside the launch hook's hold, checkpoint writes and customer-key reads on the node role, and a launch template
change that does not roll running training nodes."""

from __future__ import annotations

import base64
import copy
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from conftest import SHIPPED_STACKS, of_type, read_cluster, write_stack

from components.clouds.aws.lifecycle import BOOT_SECONDS, CHECK_RUN_SECONDS, COMPLETE_SECONDS
from components.plan.planner import PlanResult, plan_stack

LT = "aws:ec2/launchTemplate:LaunchTemplate"
HOOK = "aws:autoscaling/lifecycleHook:LifecycleHook"


@cache
def shipped(stack: str) -> PlanResult:
    return plan_stack(SHIPPED_STACKS / f"Pulumi.{stack}.yaml", SHIPPED_STACKS)


def variant(tmp_path: Path, stack: str, change: Any) -> PlanResult:
    cluster = copy.deepcopy(read_cluster(stack))
    change(cluster)
    return plan_stack(write_stack(tmp_path, "variant", cluster))


def settings(template: Any) -> dict[str, str]:
    document = yaml.safe_load(base64.b64decode(template.inputs["userData"]))
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
