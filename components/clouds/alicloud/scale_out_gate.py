"""The cluster's scale-out gate and scale-in checkpoint: the OOS (CloudOps Orchestration Service) templates that the
lifecycle hooks of every ESS node group notify, and the RAM role OOS assumes to run them.

The hook names the template as its notification target (`acs:ess:{region}:{account}:oos/{template}`, the ROS
ALIYUN::ESS::LifecycleHook NotificationArn form). On each scale-out ESS starts an execution with the
template's placeholder parameters filled in (region, new instance ids, hook id, action token); the execution
runs the bootstrap's gate command (components/bootstrap/gate.py) on each new node through Cloud Assistant
(ACS::ECS::RunCommand), then calls ESS CompleteLifecycleAction: CONTINUE when every node passed, ABANDON,
which releases them, when one failed or could not be reached. The shape is that of Alibaba's public template
ACS-ESS-LifeCycleRunCommand. The action token belongs to the scaling activity: the nodes one activity adds are
admitted or released together.

The scale-in hook notifies the checkpoint template the same way: it runs the bootstrap's checkpoint command on
every leaving node at once, then completes the action with CONTINUE whatever the command did (Auto Scaling, "best
practices for lifecycle hooks and OOS templates": a failed O&M operation on scale-in still removes the instances).
The same role runs it: it needs no action the gate lacks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_alicloud as alicloud

from gpufleet.clouds.alicloud.names import NAMES, POLICY, ROLE
from gpufleet.clouds.naming import fit

from ...bootstrap import checkpoint_command, gate_command
from .identity import service_trust_document
from .lifecycle import GATE_COMMAND_TIMEOUT, GATE_WAIT_SECONDS, checkpoint_command_timeout

OOS_SERVICE = "oos.aliyuncs.com"
# What the template runs and calls, and nothing else (the public template's list).
GATE_ECS_ACTIONS = ["ecs:RunCommand", "ecs:DescribeInvocations", "ecs:DescribeInvocationResults"]
GATE_ESS_ACTIONS = ["ess:CompleteLifecycleAction"]
# Placeholders ESS fills when a lifecycle hook notifies an OOS template.
ESS_FILLED = "filled in by ESS when the lifecycle hook notifies this template"


def notification_arn(region: str, account_id: str, template_name: str) -> str:
    """A lifecycle hook's notification target naming an OOS template."""
    return f"acs:ess:{region}:{account_id}:oos/{template_name}"


def _complete(result: str) -> dict[str, Any]:
    return {
        "Service": "ESS",
        "API": "CompleteLifecycleAction",
        "Parameters": {
            "RegionId": "{{ regionId }}",
            "LifecycleHookId": "{{ lifecycleHookId }}",
            "LifecycleActionToken": "{{ lifecycleActionToken }}",
            "LifecycleActionResult": result,
        },
    }


def _parameter(kind: str, what: str, default: Any) -> dict[str, Any]:
    return {"Type": kind, "Description": what, "Default": default}


def _hook_parameters(role_name: str, nodes: str) -> dict[str, Any]:
    """What ESS fills in when a hook notifies a template (the public ACS-ESS-LifeCycleRunCommand's inputs), and
    the role OOS runs it as."""
    return {
        "regionId": _parameter("String", f"Region of the scaling activity, {ESS_FILLED}", "${regionId}"),
        "instanceIds": _parameter("List", f"{nodes}, {ESS_FILLED}", ["${instanceIds}"]),
        "lifecycleHookId": _parameter("String", f"The lifecycle hook, {ESS_FILLED}", "${lifecycleHookId}"),
        "lifecycleActionToken": _parameter(
            "String", f"Token of the held scaling activity, {ESS_FILLED}", "${lifecycleActionToken}"
        ),
        "OOSAssumeRole": _parameter("String", "RAM role OOS assumes to run this template", role_name),
    }


def _run_on_each(name: str, what: str, command: str, timeout: int, concurrency: int, max_errors: int,
                 on_success: str, on_error: str) -> dict[str, Any]:
    """A Cloud Assistant command on every node of the scaling activity at once: one batch after another they would
    outlast the hook's hold."""
    return {
        "Name": name,
        "Action": "ACS::ECS::RunCommand",
        "Description": what,
        "OnSuccess": on_success,
        "OnError": on_error,
        "Properties": {
            "regionId": "{{ regionId }}",
            "instanceId": "{{ ACS::TaskLoopItem }}",
            "commandType": "RunShellScript",
            "commandContent": command,
            "timeout": timeout,
        },
        "Loop": {
            "Items": "{{ instanceIds }}",
            "RateControl": {"Mode": "Concurrency", "MaxErrors": max_errors, "Concurrency": concurrency},
        },
    }


def gate_template(role_name: str, concurrency: int) -> str:
    """The OOS template (JSON): the node check on every new node, then CONTINUE or ABANDON."""
    document = {
        "FormatVersion": "OOS-2019-06-01",
        "Description": "gpufleet scale-out gate: admit new GPU nodes only when the node check passes on them",
        "Parameters": _hook_parameters(role_name, "The new nodes"),
        "RamRole": "{{ OOSAssumeRole }}",
        "Tasks": [
            _run_on_each("checkNewNodes", "Run the gpufleet node check on each new node through Cloud Assistant",
                         gate_command(GATE_WAIT_SECONDS), GATE_COMMAND_TIMEOUT, concurrency, 0,
                         "admitNodes", "releaseNodes"),
            {
                "Name": "admitNodes",
                "Action": "ACS::ExecuteAPI",
                "Description": "Every new node passed: continue the scale-out",
                "OnSuccess": "ACS::END",
                "Properties": _complete("CONTINUE"),
            },
            {
                "Name": "releaseNodes",
                "Action": "ACS::ExecuteAPI",
                "Description": "A new node failed the check or could not run it: abandon, ESS releases the new nodes",
                "Properties": _complete("ABANDON"),
            },
        ],
    }
    return json.dumps(document, indent=2)


def checkpoint_template(role_name: str, concurrency: int, checkpoint_grace_seconds: int) -> str:
    """The OOS template (JSON): the stack's checkpoint on every leaving node, then CONTINUE whatever it did."""
    document = {
        "FormatVersion": "OOS-2019-06-01",
        "Description": "gpufleet scale-in checkpoint: the stack's checkpoint on leaving GPU nodes, then let them go",
        "Parameters": _hook_parameters(role_name, "The leaving nodes"),
        "RamRole": "{{ OOSAssumeRole }}",
        "Tasks": [
            # Every node runs its checkpoint even when another's fails (MaxErrors: all of them).
            _run_on_each("checkpointNodes", "Run the stack's checkpoint on each leaving node through Cloud Assistant",
                         checkpoint_command(), checkpoint_command_timeout(checkpoint_grace_seconds), concurrency,
                         concurrency, "releaseNodes", "releaseNodes"),
            {
                "Name": "releaseNodes",
                "Action": "ACS::ExecuteAPI",
                "Description": "The checkpoint ran (or could not): continue the scale-in",
                "Properties": _complete("CONTINUE"),
            },
        ],
    }
    return json.dumps(document, indent=2)


def gate_policy_document(region: str, account_id: str) -> str:
    """What the gate's role may do: run and read Cloud Assistant commands in the stack's region and account, and
    complete lifecycle actions (an action RAM authorises on every resource, not per scaling group)."""
    statements = [
        # New nodes have no ids until they launch and no tag condition is documented for these actions, so the
        # narrowest scope is the region and account (Cloud Assistant's RAM guide scopes by region, instance and
        # command); RunCommand also creates the command it runs.
        {"Effect": "Allow", "Action": GATE_ECS_ACTIONS, "Resource": [f"acs:ecs:{region}:{account_id}:*"]},
        # ess:CompleteLifecycleAction is authorised on All Resources only (Auto Scaling API reference,
        # api-ess-2022-02-22-completelifecycleaction, Authorization information: resource type "All Resources", no
        # condition key): the request names only the hook id and token, so a scaling-group ARN never matches it.
        {"Effect": "Allow", "Action": GATE_ESS_ACTIONS, "Resource": ["*"]},
    ]
    return json.dumps({"Version": "1", "Statement": statements}, sort_keys=True)


@dataclass(frozen=True)
class ScaleOutGateArgs:
    base: str
    """The cluster in its environment (naming.stack_base): the role, policy and template names carry it (RAM names are
    account-wide, OOS template names unique in the region)."""
    region: str
    account_id: pulumi.Input[str]
    concurrency: int
    """New nodes checked at once: the most a scaling activity can add (the largest group's max size)."""
    checkpoint_grace_seconds: int
    """How long the stack's checkpoint may run on a leaving node."""
    tags: dict[str, str]


class AlicloudScaleOutGate(pulumi.ComponentResource):
    """The templates and their role; `attach` grants the role what the templates call."""

    notification_arn: pulumi.Output[str]
    checkpoint_arn: pulumi.Output[str]
    """The scale-in hooks' target: the checkpoint template."""
    template_name: pulumi.Output[str]
    role_name: pulumi.Output[str]

    def __init__(self, name: str, args: ScaleOutGateArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:alicloud:ScaleOutGate", name, None, opts)
        self._name, self._args = name, args
        child = pulumi.ResourceOptions(parent=self)
        role = alicloud.ram.Role(
            f"{name}-role",
            role_name=fit(f"{args.base}-scale-out-gate", NAMES.limit(ROLE, "roleName"), args.region),  # account-wide
            description=f"gpufleet {name}: OOS runs the node check on new nodes and the checkpoint on leaving ones",
            assume_role_policy_document=service_trust_document(OOS_SERVICE),
            tags=args.tags,
            opts=child,
        )
        template = alicloud.oos.Template(
            f"{name}-template",
            # OOS refuses names starting with ALIYUN, ACS, ALIBABA or ALICLOUD, which a cluster name may.
            template_name=f"gpufleet-{args.base}-scale-out-gate",
            content=role.role_name.apply(lambda role_name: gate_template(role_name, args.concurrency)),
            tags=args.tags,
            opts=child,
        )
        checkpoint = alicloud.oos.Template(
            f"{name}-checkpoint",
            template_name=f"gpufleet-{args.base}-scale-in-checkpoint",
            content=role.role_name.apply(
                lambda role_name: checkpoint_template(role_name, args.concurrency, args.checkpoint_grace_seconds)
            ),
            tags=args.tags,
            opts=child,
        )
        self.role_name = role.role_name
        self.template_name = template.template_name
        self.notification_arn = pulumi.Output.all(args.account_id, template.template_name).apply(
            lambda values: notification_arn(args.region, values[0], values[1])
        )
        self.checkpoint_arn = pulumi.Output.all(args.account_id, checkpoint.template_name).apply(
            lambda values: notification_arn(args.region, values[0], values[1])
        )
        self.register_outputs({"notification_arn": self.notification_arn, "checkpoint_arn": self.checkpoint_arn,
                               "role_name": self.role_name})

    def attach(self) -> alicloud.ram.RolePolicyAttachment:
        child = pulumi.ResourceOptions(parent=self)
        args = self._args
        policy = alicloud.ram.Policy(
            f"{self._name}-policy",
            policy_name=fit(f"{args.base}-scale-out-gate", NAMES.limit(POLICY, "policyName"), args.region),
            description="gpufleet lifecycle runbooks: Cloud Assistant in the stack's region, lifecycle hooks",
            policy_document=pulumi.Output.from_input(args.account_id).apply(
                lambda account: gate_policy_document(args.region, account)
            ),
            opts=child,
        )
        return alicloud.ram.RolePolicyAttachment(
            f"{self._name}-policy", role_name=self.role_name, policy_name=policy.policy_name, policy_type="Custom",
            opts=child,
        )
