"""No Alibaba node launches before its group's lifecycle hooks and the roles' grants exist, read from the plan's
dependency edges: ESS has no order of its own, the engine creates what nothing waits for at once."""

from __future__ import annotations

import json
from functools import cache

from conftest import SHIPPED_STACKS, of_type, one

from gpufleet.plan.planner import PlanResult, plan_stack
from gpufleet.plan.record import RecordedResource

GROUP = "alicloud:ess/scalingGroup:ScalingGroup"
CONFIG = "alicloud:ess/scalingConfiguration:ScalingConfiguration"
HOOK = "alicloud:ess/lifecycleHook:LifecycleHook"
ATTACHMENT = "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment"
EXECUTION = "alicloud:oos/execution:Execution"
TEMPLATE = "alicloud:oos/template:Template"


@cache
def shipped(stack: str) -> PlanResult:
    return plan_stack(SHIPPED_STACKS / f"Pulumi.{stack}.yaml", SHIPPED_STACKS)


def waits_for(plan: PlanResult, resource: RecordedResource) -> set[str]:
    """Every URN the resource waits for, directly or through what it waits for."""
    by_urn = {r.urn: r for r in plan.resources}
    seen: set[str] = set()
    todo = [*resource.depends_on, *(u for urns in resource.property_dependencies.values() for u in urns)]
    while todo:
        urn = todo.pop()
        if urn in seen:
            continue
        seen.add(urn)
        found = by_urn[urn]
        todo += [*found.depends_on, *(u for urns in found.property_dependencies.values() for u in urns)]
    return seen


def grants(plan: PlanResult) -> set[str]:
    """The node role's and the scale-out gate's policy attachments (what completes and gates the hooks)."""
    found = {r.urn for r in of_type(plan, ATTACHMENT) if "NodeIdentity" in r.urn or "ScaleOutGate" in r.urn}
    assert len(found) == 2, found
    return found


def test_a_configuration_group_is_enabled_only_after_its_hooks_and_grants() -> None:
    """The provider creates a configuration group Inactive and enables it from the configuration (enable)."""
    plan = shipped("alicloud-train-ebmgn8v")
    config = one(plan, CONFIG)
    assert config.inputs["enable"] is True
    hooks = {h.urn for h in of_type(plan, HOOK)}
    assert {h.inputs["lifecycleTransition"] for h in of_type(plan, HOOK)} == {"SCALE_OUT", "SCALE_IN"}
    assert hooks | grants(plan) <= waits_for(plan, config)
    assert not of_type(plan, EXECUTION)


def test_a_launch_template_group_starts_empty_and_is_sized_after_its_hooks_and_grants() -> None:
    """The provider enables a launch-template group when it creates it, so it starts at 0 and is sized later."""
    plan = shipped("alicloud-infer-gn7i")
    group = one(plan, GROUP)
    assert group.inputs["launchTemplateId"].startswith("lt-")
    assert (group.inputs["minSize"], group.inputs["desiredCapacity"], group.inputs["maxSize"]) == (0, 0, 8)
    assert {"minSize", "desiredCapacity"} <= set(group.ignore_changes)
    execution = one(plan, EXECUTION)
    parameters = json.loads(execution.inputs["parameters"])
    assert parameters == {"regionId": "cn-beijing", "scalingGroupId": parameters["scalingGroupId"],
                          "minSize": 0, "desiredCapacity": 2}
    assert parameters["scalingGroupId"].startswith("asg-")
    assert {h.urn for h in of_type(plan, HOOK)} | grants(plan) | {group.urn} <= waits_for(plan, execution)
    (sizing,) = [t for t in of_type(plan, TEMPLATE) if t.urn == execution.property_dependencies["templateName"][0]]
    (task,) = json.loads(sizing.inputs["content"])["Tasks"]
    assert task["Action"] == "ACS::ExecuteAPI"
    assert task["Properties"]["Service"] == "ESS" and task["Properties"]["API"] == "ModifyScalingGroup"
    assert set(task["Properties"]["Parameters"]) == {"RegionId", "ScalingGroupId", "MinSize", "DesiredCapacity"}


def test_the_gate_role_may_size_only_the_clusters_own_groups() -> None:
    plan = shipped("alicloud-infer-gn7i")
    (policy,) = [p for p in of_type(plan, "alicloud:ram/policy:Policy") if "ScaleOutGate" in p.urn]
    document = json.loads(policy.inputs["policyDocument"])
    (ess,) = [s for s in document["Statement"] if "ess:ModifyScalingGroup" in s["Action"]]
    (resource,) = ess["Resource"]
    assert "scalinggroup/asg-" in resource and "*" not in resource.split("scalinggroup/")[1]
    train = shipped("alicloud-train-ebmgn8v")
    (trained,) = [p for p in of_type(train, "alicloud:ram/policy:Policy") if "ScaleOutGate" in p.urn]
    assert "ess:ModifyScalingGroup" not in trained.inputs["policyDocument"]
