"""Issue 27: what a first real deploy of the AWS templates needs, as the engine records it (metrics reach
CloudWatch, alarms reach a person, reserved capacity is used, storage mounts, the node side of training)."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

from conftest import SHIPPED_STACKS, of_type, read_cluster, write_stack

from components.plan.planner import PlanResult, plan_stack

ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"


@cache
def shipped(stack: str) -> PlanResult:
    return plan_stack(SHIPPED_STACKS / f"Pulumi.{stack}.yaml", SHIPPED_STACKS)


def variant(tmp_path: Path, stack: str, change: Any, name: str = "variant") -> PlanResult:
    cluster = copy.deepcopy(read_cluster(stack))
    change(cluster)
    return plan_stack(write_stack(tmp_path, name, cluster))


def node_statements(plan: PlanResult) -> dict[str, dict[str, Any]]:
    (policy,) = of_type(plan, ROLE_POLICY)
    return {s["Sid"]: s for s in json.loads(policy.inputs["policy"])["Statement"]}


def test_with_metrics_the_agent_may_read_the_instance_tags_it_dimensions_by() -> None:
    # ${aws:AutoScalingGroupName}: the agent's ec2tagger calls ec2:DescribeTags and drops data points until it can.
    for stack in ("aws-train-p5", "aws-infer-g6e"):
        tags = node_statements(shipped(stack))["AgentReadsInstanceTags"]
        assert tags == {"Sid": "AgentReadsInstanceTags", "Effect": "Allow", "Action": ["ec2:DescribeTags"],
                        "Resource": "*"}


def test_without_metrics_no_tag_read_is_granted(tmp_path: Path) -> None:
    def off(cluster: dict[str, Any]) -> None:
        cluster["monitoring"] = {"gpu_metrics": False}

    assert "AgentReadsInstanceTags" not in node_statements(variant(tmp_path, "aws-train-p5", off))
