"""Two environments of one AWS cluster in one account and Region (issue 40 item 5): no name the account or the
Region holds once (gpufleet/clouds/aws/names.py, every scope wider than the stack's own resources) is the same."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from conftest import read_cluster, without_job_operators, write_stack

from gpufleet.clouds.aws.names import NAMES
from gpufleet.plan.planner import PlanResult, plan_stack

STACK_SCOPES = ("none", "parent")  # names unique only under their parent, or not unique at all


def account_and_region_names(plan: PlanResult) -> set[tuple[str, str, Any]]:
    found = set()
    for resource in plan.resources:
        for rule in NAMES.rules.values():
            if rule.type == resource.type and rule.scope not in STACK_SCOPES and rule.path in resource.inputs:
                found.add((resource.type, rule.path, resource.inputs[rule.path]))
    return found


@pytest.mark.parametrize("stack", ["aws-train-p5", "aws-infer-g6e", "aws-train-eks"])
def test_dev_and_prod_of_one_cluster_share_no_account_or_region_name(tmp_path: Path, stack: str) -> None:
    plans = []
    for environment in ("dev", "prod"):
        cluster = copy.deepcopy(read_cluster(stack))
        cluster["environment"] = environment
        if "scheduler" in cluster:  # Kubernetes objects are no AWS names: the job operators' are left out
            without_job_operators(cluster)
        plans.append(plan_stack(write_stack(tmp_path, environment, cluster)))
    dev, prod = (account_and_region_names(plan) for plan in plans)
    assert ("aws:kms/alias:Alias", "name", f"alias/gpufleet/{read_cluster(stack)['name']}/dev") in dev
    assert not dev & prod, sorted(dev & prod)
