"""AWS stack rules (EFA and spot wiring) over recorded stacks; the common rules are in test_policies_common."""

from __future__ import annotations

import base64
import json
from typing import Any

import libyaml_files
from pulumi_policy import PolicyCustomTimeouts, PolicyResource, PolicyResourceOptions, StackValidationArgs
from pulumi_policy.proxy import UNKNOWN_ARRAY_VALUE, unknown_checking_proxy
from stack_rule_args import ASG, FLEET, LT, PG, SG, messages, res, urn

from gpufleet.plan.record import RecordedResource
from policies.registry import RULES_BY_NAME

SPOT_PATTERN = json.dumps({"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]})


def efa_template(name: str = "lt", sg: str | None = "efa-sg", **extra: Any) -> RecordedResource:
    interfaces = [
        {
            "interfaceType": "efa",
            "networkCardIndex": card,
            "deviceIndex": 0 if card == 0 else 1,
            "securityGroups": [f"{sg}-id"] if sg else [],
        }
        for card in range(4)
    ]
    deps = (urn(SG, sg),) if sg else ()
    return res(
        LT,
        name,
        {"instanceType": "p5.48xlarge", "networkInterfaces": interfaces, **extra},
        depends_on=deps,
        property_dependencies={"networkInterfaces": deps} if deps else {},
    )


def self_rules(direction_keys: tuple[str, ...]) -> dict[str, Any]:
    return {key: [{"protocol": "-1", "fromPort": 0, "toPort": 0, "self": True}] for key in direction_keys}


# EFA security group ---------------------------------------------------------------------------------


def test_efa_group_with_inline_self_rules_passes():
    stack = [res(SG, "efa-sg", self_rules(("ingress", "egress"))), efa_template()]
    assert messages("aws-efa-security-group-self-rules", stack) == []


def test_efa_group_without_self_egress_fails():
    stack = [res(SG, "efa-sg", self_rules(("ingress",))), efa_template()]
    ((where, message),) = messages("aws-efa-security-group-self-rules", stack)
    assert where == urn(SG, "efa-sg")
    assert "lacks a self-referencing all-traffic egress rule" in message and "self: True" in message


def test_efa_group_with_separate_self_rule_resources_passes():
    sg_urn = urn(SG, "efa-sg")
    deps = {"securityGroupId": (sg_urn,), "referencedSecurityGroupId": (sg_urn,)}
    stack = [
        res(SG, "efa-sg", {}),
        efa_template(),
        res(
            "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
            "in",
            {"ipProtocol": "-1", "securityGroupId": "efa-sg-id", "referencedSecurityGroupId": "efa-sg-id"},
            (sg_urn,),
            deps,
        ),
        res(
            "aws:ec2/securityGroupRule:SecurityGroupRule",
            "out",
            {
                "type": "egress",
                "protocol": "-1",
                "fromPort": 0,
                "toPort": 0,
                "self": True,
                "securityGroupId": "efa-sg-id",
            },
            (sg_urn,),
        ),
    ]
    assert messages("aws-efa-security-group-self-rules", stack) == []


def test_efa_group_rule_to_another_group_does_not_count():
    sg_urn = urn(SG, "efa-sg")
    stack = [
        res(SG, "efa-sg", self_rules(("egress",))),
        efa_template(),
        res(
            "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
            "in",
            {"ipProtocol": "-1", "securityGroupId": "efa-sg-id", "referencedSecurityGroupId": "other-sg-id"},
            (sg_urn,),
        ),
    ]
    ((_, message),) = messages("aws-efa-security-group-self-rules", stack)
    assert "all-traffic ingress rule" in message


def test_efa_group_with_unknown_rules_is_not_failed():
    stack = [
        res(SG, "efa-sg", {"ingress": UNKNOWN_ARRAY_VALUE, "egress": UNKNOWN_ARRAY_VALUE}),
        efa_template(),
    ]
    assert messages("aws-efa-security-group-self-rules", stack) == []


def test_efa_interface_without_security_group_fails():
    ((where, message),) = messages("aws-efa-security-group-self-rules", [efa_template(sg=None)])
    assert where == urn(LT, "lt") and "EFA network_interfaces[0, 1, 2, 3] carry no security group" in message


# EFA placement and subnets --------------------------------------------------------------------------


def asg(
    name: str, template: RecordedResource, extra_deps: tuple[str, ...] = (), **inputs: Any
) -> RecordedResource:
    return res(
        ASG,
        name,
        {"maxSize": 4, "launchTemplate": {"id": "lt-id", "version": "1"}, **inputs},
        depends_on=(template.urn, *extra_deps),
    )


def test_efa_template_without_placement_group_fails():
    template = efa_template()
    ((where, message),) = messages("aws-efa-cluster-placement-group", [template, asg("g", template)])
    assert where == template.urn and "strategy 'cluster'" in message


def test_efa_in_spread_placement_group_fails_cluster_passes():
    for strategy, expected in (("spread", 1), ("cluster", 0)):
        group = res(PG, "pg", {"strategy": strategy})
        template = efa_template(placement={"groupName": "pg-name"})
        template = RecordedResource(**{**template.__dict__, "depends_on": (*template.depends_on, group.urn)})
        found = messages("aws-efa-cluster-placement-group", [group, template, asg("g", template)])
        assert len(found) == expected
        if expected:
            assert found[0] == (
                group.urn,
                "placement group strategy is 'spread' for EFA nodes: set strategy = 'cluster'",
            )


def test_placement_on_the_group_counts():
    template = efa_template()
    assert (
        messages("aws-efa-cluster-placement-group", [template, asg("g", template, placementGroup="pg")]) == []
    )


def test_reserved_efa_template_passes_without_a_placement_group_and_fails_in_one():
    reserved = {"capacityReservationSpecification": {"capacityReservationTarget": {
        "capacityReservationId": "cr-0123456789abcdef0"}}}
    template = efa_template(**reserved)
    assert messages("aws-efa-cluster-placement-group", [template, asg("g", template)]) == []
    placed = efa_template(placement={"groupName": "pg-name"}, **reserved)
    ((where, message),) = messages("aws-efa-cluster-placement-group", [placed, asg("g", placed)])
    assert where == placed.urn and "remove the placement group" in message


def test_efa_group_over_two_subnets_fails_one_passes():
    template = efa_template()
    two = asg("g", template, vpcZoneIdentifiers=["subnet-a", "subnet-b"])
    ((where, message),) = messages("aws-efa-single-subnet", [template, two])
    assert where == two.urn and "spans 2 subnets" in message
    one = asg("g", template, vpcZoneIdentifiers=["subnet-a"])
    assert messages("aws-efa-single-subnet", [template, one]) == []


# spot -----------------------------------------------------------------------------------------------


def spot_group(rebalance: bool | None = None) -> RecordedResource:
    inputs: dict[str, Any] = {
        "maxSize": 4,
        "mixedInstancesPolicy": {
            "instancesDistribution": {"onDemandBaseCapacity": 0, "onDemandPercentageAboveBaseCapacity": 0},
            "launchTemplate": {
                "launchTemplateSpecification": {"launchTemplateId": "lt-id", "version": "1"},
                "overrides": [{"instanceType": "p5.48xlarge"}],
            },
        },
    }
    if rebalance is not None:
        inputs["capacityRebalance"] = rebalance
    return res(ASG, "spot", inputs)


def test_spot_group_without_capacity_rebalance_fails():
    ((where, message),) = messages("aws-spot-capacity-rebalance", [spot_group()])
    assert where == urn(ASG, "spot") and "capacity_rebalance = True" in message
    assert messages("aws-spot-capacity-rebalance", [spot_group(True)]) == []


def test_spot_market_launch_template_makes_a_spot_group():
    template = res(LT, "lt", {"instanceMarketOptions": {"marketType": "spot"}})
    group = res(
        ASG,
        "g",
        {"maxSize": 2, "launchTemplate": {"id": "lt-id", "version": "1"}},
        depends_on=(template.urn,),
    )
    ((where, _),) = messages("aws-spot-capacity-rebalance", [template, group])
    assert where == group.urn
    on_demand = res(LT, "lt", {})
    assert messages("aws-spot-capacity-rebalance", [on_demand, group]) == []


def node_template(units: list[str]) -> RecordedResource:
    cloud_config = "#cloud-config\n" + libyaml_files.dump({"runcmd": [["systemctl", "enable", *units]]})
    return res(LT, "lt", {"userData": base64.b64encode(cloud_config.encode()).decode()})


def watched_group(template: RecordedResource, terminating: bool = True) -> RecordedResource:
    group = spot_group(True)
    transition = "autoscaling:EC2_INSTANCE_TERMINATING" if terminating else "autoscaling:EC2_INSTANCE_LAUNCHING"
    group.inputs["initialLifecycleHooks"] = [{"name": "checkpoint", "lifecycleTransition": transition}]
    return res(ASG, "spot", group.inputs, depends_on=(template.urn,))


def test_an_event_rule_alone_no_longer_handles_spot_warnings():
    # An EventBridge rule forwards the warning; nothing on the node acts on it.
    rule = res("aws:cloudwatch/eventRule:EventRule", "spot-warning", {"eventPattern": SPOT_PATTERN})
    template = node_template(["gpufleet-health.service"])
    ((where, message),) = messages("aws-spot-interruption-handler", [template, watched_group(template), rule])
    assert where == urn(ASG, "spot") and "gpufleet-spot-watcher.service is not enabled" in message


def test_spot_nodes_with_the_watcher_and_a_terminate_hook_pass():
    template = node_template(["gpufleet-health.service", "gpufleet-spot-watcher.service"])
    assert messages("aws-spot-interruption-handler", [template, watched_group(template)]) == []
    ((_, message),) = messages("aws-spot-interruption-handler", [template, watched_group(template, False)])
    assert "autoscaling:EC2_INSTANCE_TERMINATING lifecycle hook" in message
    hook = res("aws:autoscaling/lifecycleHook:LifecycleHook", "hook",
               {"lifecycleTransition": "autoscaling:EC2_INSTANCE_TERMINATING"}, depends_on=(urn(ASG, "spot"),))
    assert messages("aws-spot-interruption-handler", [template, watched_group(template, False), hook]) == []


def test_a_fleet_that_keeps_the_rebalanced_node_fails_and_on_demand_needs_nothing():
    template = node_template(["gpufleet-spot-watcher.service"])
    fleet = res(FLEET, "fleet", {"targetCapacitySpecification": {"defaultTargetCapacityType": "spot"},
                                 "spotOptions": {"maintenanceStrategies": {"capacityRebalance": {
                                     "replacementStrategy": "launch"}}}}, depends_on=(template.urn,))
    ((where, message),) = messages("aws-spot-interruption-handler", [template, fleet])
    assert where == fleet.urn and "launch-before-terminate" in message
    on_demand = res(ASG, "od", {"maxSize": 2, "launchTemplate": {"id": "lt-id", "version": "1"}})
    assert messages("aws-spot-interruption-handler", [on_demand]) == []


# the SDK's own argument type ------------------------------------------------------------------------


def test_stack_rule_through_stack_validation_args():
    opts = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], None)
    group = PolicyResource(
        ASG, unknown_checking_proxy(spot_group().inputs), urn(ASG, "spot"), "spot", opts, None, None, [], {}
    )
    found: list[tuple[str | None, str]] = []
    RULES_BY_NAME["aws-spot-capacity-rebalance"].policy.validate(
        StackValidationArgs([group], {}), lambda message, where=None: found.append((where, message))
    )
    assert [where for where, _ in found] == [urn(ASG, "spot")]
