"""The Alibaba lifecycle runbooks as the engine records them: the OOS templates the scale-out and scale-in hooks
notify, their RAM role and policy, and the hooks of the groups."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import of_type, one, read_cluster, registered_types, shipped_plan, write_stack

from components.bootstrap import checkpoint_command, gate_command
from components.clouds.alicloud.lifecycle import (
    CHECKPOINT_COMMAND_MARGIN,
    CHECKPOINT_OVERHEAD_SECONDS,
    GATE_COMMAND_TIMEOUT,
    GATE_WAIT_SECONDS,
    LAUNCH_HOOK_TIMEOUT,
)
from gpufleet.plan.planner import PlanResult, plan_stack
from gpufleet.plan.record import RecordedResource

TEMPLATE = "alicloud:oos/template:Template"
HOOK = "alicloud:ess/lifecycleHook:LifecycleHook"
GROUP = "alicloud:ess/scalingGroup:ScalingGroup"
TRAIN = "alicloud-train-ebmgn8v"
GATE = "$gpufleet:alicloud:ScaleOutGate$"
ESS_PLACEHOLDERS = {
    "regionId": "${regionId}",
    "instanceIds": ["${instanceIds}"],
    "lifecycleHookId": "${lifecycleHookId}",
    "lifecycleActionToken": "${lifecycleActionToken}",
}


def train() -> PlanResult:
    return shipped_plan(TRAIN)


def gate_resource(plan: PlanResult, typ: str) -> RecordedResource:
    (found,) = [r for r in of_type(plan, typ) if GATE in r.urn]
    return found


def template(plan: PlanResult, suffix: str = "-scale-out-gate") -> RecordedResource:
    (found,) = [t for t in of_type(plan, TEMPLATE) if t.inputs["templateName"].endswith(suffix)]
    return found


def content(plan: PlanResult, suffix: str = "-scale-out-gate") -> dict[str, Any]:
    return json.loads(template(plan, suffix).inputs["content"])


def tasks(plan: PlanResult, suffix: str = "-scale-out-gate") -> dict[str, dict[str, Any]]:
    return {task["Name"]: task for task in content(plan, suffix)["Tasks"]}


def scale_out_hook(plan: PlanResult, transition: str = "SCALE_OUT") -> dict[str, Any]:
    (hook,) = [h.inputs for h in of_type(plan, HOOK) if h.inputs["lifecycleTransition"] == transition]
    return hook


def test_template_runs_the_bootstraps_gate_on_every_new_node_below_the_hooks_timeout() -> None:
    run = tasks(train())["checkNewNodes"]
    assert run["Action"] == "ACS::ECS::RunCommand"
    properties = run["Properties"]
    assert properties["commandType"] == "RunShellScript"
    assert properties["commandContent"] == gate_command(GATE_WAIT_SECONDS)
    assert "exec gpufleet-nodecheck --expect" in properties["commandContent"]
    assert GATE_WAIT_SECONDS < properties["timeout"] == GATE_COMMAND_TIMEOUT < LAUNCH_HOOK_TIMEOUT
    assert properties["instanceId"] == "{{ ACS::TaskLoopItem }}" and properties["regionId"] == "{{ regionId }}"
    # Every new node at once (the group's max size) and no failure tolerated.
    assert run["Loop"]["Items"] == "{{ instanceIds }}"
    assert run["Loop"]["RateControl"] == {"Mode": "Concurrency", "MaxErrors": 0, "Concurrency": 16}


def test_template_continues_when_the_check_passes_and_abandons_when_it_fails() -> None:
    found = tasks(train())
    run = found["checkNewNodes"]
    admit, release = found[run["OnSuccess"]], found[run["OnError"]]
    for task, result in ((admit, "CONTINUE"), (release, "ABANDON")):
        assert task["Action"] == "ACS::ExecuteAPI"
        assert (task["Properties"]["Service"], task["Properties"]["API"]) == ("ESS", "CompleteLifecycleAction")
        assert task["Properties"]["Parameters"] == {
            "RegionId": "{{ regionId }}",
            "LifecycleHookId": "{{ lifecycleHookId }}",
            "LifecycleActionToken": "{{ lifecycleActionToken }}",
            "LifecycleActionResult": result,
        }
    # Tasks run in order: the admission ends the execution, or the release would follow it.
    assert admit["OnSuccess"] == "ACS::END"


def test_template_takes_what_ess_fills_in_and_runs_as_the_gates_role() -> None:
    plan = train()
    document = content(plan)
    assert document["FormatVersion"] == "OOS-2019-06-01"
    parameters = document["Parameters"]
    assert {name: parameters[name]["Default"] for name in ESS_PLACEHOLDERS} == ESS_PLACEHOLDERS
    assert document["RamRole"] == "{{ OOSAssumeRole }}"
    assert parameters["OOSAssumeRole"]["Default"] == gate_resource(plan, "alicloud:ram/role:Role").inputs["roleName"]
    gate = template(plan)
    assert not gate.inputs["templateName"].lower().startswith(("aliyun", "acs", "alibaba", "alicloud"))
    assert len(gate.inputs["content"].encode()) < 64 * 1024  # OOS's template size limit


def test_gate_role_is_trusted_by_oos_and_may_only_run_commands_and_complete_hooks_as_ram_authorises_it() -> None:
    plan = train()
    trust = json.loads(gate_resource(plan, "alicloud:ram/role:Role").inputs["assumeRolePolicyDocument"])
    assert trust["Statement"] == [
        {"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"Service": ["oos.aliyuncs.com"]}}
    ]
    policy = gate_resource(plan, "alicloud:ram/policy:Policy")
    statements = json.loads(policy.inputs["policyDocument"])["Statement"]
    actions = sorted(a for s in statements for a in s["Action"])
    assert actions == ["ecs:DescribeInvocationResults", "ecs:DescribeInvocations", "ecs:RunCommand",
                       "ess:CompleteLifecycleAction"]
    assert all(s["Effect"] == "Allow" and "*" not in "".join(s["Action"]) for s in statements)
    resources = {a: s["Resource"] for s in statements for a in s["Action"]}
    assert re.fullmatch(r"acs:ecs:cn-wulanchabu:\d{16}:\*", *resources["ecs:RunCommand"])
    # Nothing in it names a scaling group: it waits for no group.
    assert one(plan, GROUP).urn not in policy.property_dependencies.get("policyDocument", ())
    # RAM authorises CompleteLifecycleAction on All Resources only (its API reference): a group ARN never matches.
    assert resources["ess:CompleteLifecycleAction"] == ["*"]
    attachment = gate_resource(plan, "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment").inputs
    assert attachment["roleName"] == gate_resource(plan, "alicloud:ram/role:Role").inputs["roleName"]
    assert (attachment["policyName"], attachment["policyType"]) == (policy.inputs["policyName"], "Custom")


def test_scale_out_hook_notifies_the_template_and_releases_a_node_that_never_passes() -> None:
    plan = train()
    hook = scale_out_hook(plan)
    gate = template(plan)
    account = r"\d{16}"
    assert re.fullmatch(rf"acs:ess:cn-wulanchabu:{account}:oos/{gate.inputs['templateName']}",
                        hook["notificationArn"])
    assert (hook["defaultResult"], hook["heartbeatTimeout"]) == ("ABANDON", LAUNCH_HOOK_TIMEOUT)
    (recorded,) = [h for h in of_type(plan, HOOK) if h.inputs is hook]
    assert gate.urn in recorded.property_dependencies["notificationArn"]


CHECKPOINT = "-scale-in-checkpoint"


def test_scale_in_hook_notifies_the_checkpoint_template_and_holds_the_grace_and_the_runbooks_overhead() -> None:
    plan = train()
    hook = scale_out_hook(plan, "SCALE_IN")
    checkpoint = template(plan, CHECKPOINT)
    assert re.fullmatch(rf"acs:ess:cn-wulanchabu:\d{{16}}:oos/{checkpoint.inputs['templateName']}",
                        hook["notificationArn"])
    (recorded,) = [h for h in of_type(plan, HOOK) if h.inputs is hook]
    assert checkpoint.urn in recorded.property_dependencies["notificationArn"]
    grace = read_cluster(TRAIN).get("bootstrap", {}).get("checkpoint_grace_seconds", 300)
    assert (hook["defaultResult"], hook["heartbeatTimeout"]) == ("CONTINUE", grace + CHECKPOINT_OVERHEAD_SECONDS)


def test_checkpoint_template_runs_the_checkpoint_on_every_leaving_node_then_continues() -> None:
    plan = train()
    document = content(plan, CHECKPOINT)
    parameters = document["Parameters"]
    assert {name: parameters[name]["Default"] for name in ESS_PLACEHOLDERS} == ESS_PLACEHOLDERS
    assert document["RamRole"] == "{{ OOSAssumeRole }}"
    assert parameters["OOSAssumeRole"]["Default"] == gate_resource(plan, "alicloud:ram/role:Role").inputs["roleName"]
    found = tasks(plan, CHECKPOINT)
    run = found["checkpointNodes"]
    assert run["Action"] == "ACS::ECS::RunCommand"
    properties = run["Properties"]
    assert properties["commandContent"] == checkpoint_command()
    assert "checkpoint interruption" in properties["commandContent"]
    grace = scale_out_hook(plan, "SCALE_IN")["heartbeatTimeout"] - CHECKPOINT_OVERHEAD_SECONDS
    # The checkpoint gets its whole grace, the command a margin past it, and the hook's hold covers both.
    assert properties["timeout"] == grace + CHECKPOINT_COMMAND_MARGIN < grace + CHECKPOINT_OVERHEAD_SECONDS
    assert run["Loop"]["Items"] == "{{ instanceIds }}"
    assert run["Loop"]["RateControl"] == {"Mode": "Concurrency", "MaxErrors": 16, "Concurrency": 16}
    # Whether the checkpoint ran or failed, the removal continues: ESS removes the node either way.
    release = found[run["OnSuccess"]]
    assert run["OnError"] == run["OnSuccess"] == "releaseNodes" and len(found) == 2
    assert (release["Action"], release["Properties"]["API"]) == ("ACS::ExecuteAPI", "CompleteLifecycleAction")
    assert release["Properties"]["Parameters"]["LifecycleActionResult"] == "CONTINUE"
    assert release["Properties"]["Parameters"]["LifecycleActionToken"] == "{{ lifecycleActionToken }}"


def test_every_scaling_group_of_both_shipped_stacks_checkpoints_on_scale_in() -> None:
    for stack in (TRAIN, "alicloud-infer-gn7i"):
        plan = shipped_plan(stack)
        hooks = [h.inputs for h in of_type(plan, HOOK) if h.inputs["lifecycleTransition"] == "SCALE_IN"]
        assert len(hooks) == len(of_type(plan, GROUP)) >= 1
        assert all(h["notificationArn"].endswith(
            f"oos/gpufleet-{read_cluster(stack)['name']}-{read_cluster(stack)['environment']}{CHECKPOINT}")
                   for h in hooks)


def test_gate_checks_as_many_nodes_at_once_as_the_largest_group_can_add(tmp_path: Path) -> None:
    cluster = copy.deepcopy(read_cluster(TRAIN))
    second = {**copy.deepcopy(cluster["node_groups"][0]), "name": "h20b", "size": {"min": 0, "desired": 1, "max": 40}}
    cluster["node_groups"].append(second)
    plan = plan_stack(write_stack(tmp_path, "two-groups", cluster))
    assert tasks(plan)["checkNewNodes"]["Loop"]["RateControl"]["Concurrency"] == 40
    hooks = [h.inputs for h in of_type(plan, HOOK) if h.inputs["lifecycleTransition"] == "SCALE_OUT"]
    assert len(hooks) == 2 and len({h["notificationArn"] for h in hooks}) == 1


def test_fleet_only_cluster_has_no_hooks_and_no_gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = copy.deepcopy(read_cluster("alicloud-infer-gn7i"))
    cluster["node_groups"][0].update(provisioner="fleet", spot_max_price=2.5)
    del cluster["node_groups"][0]["idle"]  # an Auto Provisioning Group takes no ESS alarm task
    path = write_stack(tmp_path, "fleet", cluster)
    types = registered_types(monkeypatch)
    plan = plan_stack(path)
    assert "alicloud:ecs/autoProvisioningGroup:AutoProvisioningGroup" in types
    assert TEMPLATE not in types and HOOK not in types
    assert not [r for r in plan.resources if GATE in r.urn]
