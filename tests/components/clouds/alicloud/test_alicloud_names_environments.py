"""Two environments of one Alibaba Cloud VM cluster in one account share no name unique in a region or wider: the
same stack planned as dev and as prod asks for different RAM roles and policies, OOS templates, KMS alias, launch
template, deployment set, contact, contact group, application group, event rule, log project, VPC and EIP names,
so neither stack takes over (or collides with) the other's."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from conftest import read_cluster, write_stack

from gpufleet.clouds.alicloud.names import NAMES
from gpufleet.plan.planner import PlanResult, plan_stack

# Scopes a second stack of the same account can collide in (names.py rows; parent, vpc and none cannot).
SHARED_SCOPES = ("region", "account", "region, every account")
INSTANCE = "kst-bjj62f1cb66fa42qo"  # a KMS instance id of the documented shape (kst-...)


def with_key_and_deployment_set(stack: str) -> dict[str, Any]:
    """The shipped VM stack with a created key (its alias) and, on the inference stack, a LowLatency group."""
    cluster = copy.deepcopy(read_cluster(stack))
    cluster["storage"].update(kms_key="create", dkms_instance_id=INSTANCE)
    if stack == "alicloud-infer-gn7i":  # beside its spot group, an on-demand one in a LowLatency deployment set
        steady = {**copy.deepcopy(cluster["node_groups"][0]), "name": "steady", "capacity": "on-demand",
                  "zone": "cn-beijing-h"}
        cluster["node_groups"].append(steady)
        cluster["low_latency_groups"] = ["steady"]
    return cluster


def scoped_names(plan: PlanResult) -> dict[tuple[str, str], set[str]]:
    """Every name the plan gives whose row is unique in a region or wider, by (type, input)."""
    found: dict[tuple[str, str], set[str]] = {}
    for resource in plan.resources:
        for (typ, path), rule in NAMES.rules.items():
            if typ == resource.type and rule.scope in SHARED_SCOPES and isinstance(resource.inputs.get(path), str):
                found.setdefault((typ, path), set()).add(resource.inputs[path])
    return found


@pytest.mark.parametrize("stack", ["alicloud-train-ebmgn8v", "alicloud-infer-gn7i"])
def test_dev_and_prod_of_one_cluster_share_no_region_or_account_scoped_name(tmp_path: Path, stack: str) -> None:
    plans = {}
    for environment in ("dev", "prod"):
        cluster = {**with_key_and_deployment_set(stack), "environment": environment}
        plans[environment] = plan_stack(write_stack(tmp_path, f"{stack}-{environment}", cluster))
    dev, prod = scoped_names(plans["dev"]), scoped_names(plans["prod"])
    expected = {"alicloud:ram/role:Role", "alicloud:ram/policy:Policy", "alicloud:oos/template:Template",
                "alicloud:kms/alias:Alias", "alicloud:cms/alarmContact:AlarmContact",
                "alicloud:cms/alarmContactGroup:AlarmContactGroup", "alicloud:cms/monitorGroup:MonitorGroup",
                "alicloud:cms/eventRule:EventRule", "alicloud:log/project:Project",
                "alicloud:ess/scalingGroup:ScalingGroup"}
    if stack == "alicloud-infer-gn7i":
        expected |= {"alicloud:ecs/ecsLaunchTemplate:EcsLaunchTemplate",
                     "alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet"}
    assert expected <= {typ for typ, _ in dev}, "the plan lacks a name this test means to compare"
    shared = {key: dev[key] & prod.get(key, set()) for key in dev if dev[key] & prod.get(key, set())}
    assert not shared, shared
    # Readable: the environment is in the name, not only in a hash.
    assert all("prod" in name for name in prod[("alicloud:oos/template:Template", "templateName")])
    assert prod[("alicloud:kms/alias:Alias", "aliasName")] == {f"alias/gpufleet-{read_cluster(stack)['name']}-prod"}
