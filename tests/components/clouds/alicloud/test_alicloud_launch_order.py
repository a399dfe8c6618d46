"""No Alibaba node launches before its group's lifecycle hooks and the roles' grants exist, read from the plan's
dependency edges: ESS has no order of its own, the engine creates what nothing waits for at once."""

from __future__ import annotations

from conftest import of_type, one
from conftest import shipped_plan as shipped

from gpufleet.plan.planner import PlanResult
from gpufleet.plan.record import RecordedResource

GROUP = "alicloud:ess/scalingGroup:ScalingGroup"
CONFIG = "alicloud:ess/scalingConfiguration:ScalingConfiguration"
HOOK = "alicloud:ess/lifecycleHook:LifecycleHook"
ATTACHMENT = "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment"
EXECUTION = "alicloud:oos/execution:Execution"
TEMPLATE = "alicloud:oos/template:Template"
SIZE_TYPE = "pulumi-python:dynamic/alicloud:ScalingGroupSize"


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
    """The provider enables a launch-template group when it creates it, so it starts at 0 and is sized later, by
    the deployer's own ModifyScalingGroup (group_size.py): an OOS execution's Failed counted as done."""
    plan = shipped("alicloud-infer-gn7i")
    group = one(plan, GROUP)
    assert group.inputs["launchTemplateId"].startswith("lt-")
    assert (group.inputs["minSize"], group.inputs["desiredCapacity"], group.inputs["maxSize"]) == (0, 0, 8)
    assert {"minSize", "desiredCapacity"} <= set(group.ignore_changes)
    size = one(plan, SIZE_TYPE)
    assert {k: size.inputs[k] for k in ("min_size", "desired_capacity", "region")} == {
        "min_size": 0, "desired_capacity": 2, "region": "cn-beijing"}
    assert size.inputs["scaling_group_id"].startswith("asg-")
    assert size.property_dependencies["scaling_group_id"] == (group.urn,)
    assert {h.urn for h in of_type(plan, HOOK)} | grants(plan) <= waits_for(plan, size)
    assert not of_type(plan, EXECUTION)


def test_the_gate_role_sizes_no_group() -> None:
    for stack in ("alicloud-infer-gn7i", "alicloud-train-ebmgn8v"):
        (policy,) = [p for p in of_type(shipped(stack), "alicloud:ram/policy:Policy") if "ScaleOutGate" in p.urn]
        assert "ess:ModifyScalingGroup" not in policy.inputs["policyDocument"]
    assert not [t for t in of_type(shipped("alicloud-infer-gn7i"), TEMPLATE)
                if t.inputs["templateName"].endswith("-capacity")]
