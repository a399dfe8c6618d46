"""Alibaba Cloud stack rules (eRDMA zone and self-rule, spot interruption path) and the scaling-group
reader the budget rule uses. Each rule fires on a bad stack and passes a good one."""

from __future__ import annotations

from alicloud_rule_args import APG, ASG, EVENT_RULE, LT, SC, SG, SG_RULE, VSWITCH, eri_interfaces
from stack_rule_args import messages, res, urn

ONE_ZONE = "alicloud-erdma-one-zone"
SELF_RULE = "alicloud-erdma-security-group-self-rule"
SPOT = "alicloud-spot-interruption-handler"
INTERRUPTION = "Instance:PreemptibleInstanceInterruption"


def switch(name: str, zone: str):
    return res(VSWITCH, name, {"zoneId": zone, "cidrBlock": "10.0.0.0/20"})


def group_over(*switches, max_size: int = 4):
    deps = tuple(s.urn for s in switches)
    return res(ASG, "g", {"maxSize": max_size, "vswitchIds": [f"vsw-{s.name}" for s in switches]},
               depends_on=deps, property_dependencies={"vswitchIds": deps})


def eri_configuration(group, security_group=None, **props):
    deps = (group.urn, *((security_group.urn,) if security_group else ()))
    inputs = {"scalingGroupId": "asg-1", "instanceTypes": ["ecs.ebmgn8v.48xlarge"],
              "networkInterfaces": eri_interfaces(2), **props}
    return res(SC, "sc", inputs, depends_on=deps, property_dependencies={"scalingGroupId": (group.urn,)})


def test_erdma_group_over_two_zones_fails_one_zone_passes():
    a, b = switch("a", "cn-wulanchabu-a"), switch("b", "cn-wulanchabu-b")
    group = group_over(a, b)
    ((where, message),) = messages(ONE_ZONE, [a, b, group, eri_configuration(group)])
    assert where == group.urn
    assert message.startswith("eRDMA group spans zones cn-wulanchabu-a, cn-wulanchabu-b")
    single = group_over(a)
    assert messages(ONE_ZONE, [a, single, eri_configuration(single)]) == []


def test_non_erdma_group_may_span_zones():
    a, b = switch("a", "cn-wulanchabu-a"), switch("b", "cn-wulanchabu-b")
    group = group_over(a, b)
    plain = eri_configuration(group, networkInterfaces=[])
    assert messages(ONE_ZONE, [a, b, group, plain]) == []


def test_brought_vswitches_over_one_fail():
    group = res(ASG, "g", {"maxSize": 4, "vswitchIds": ["vsw-brought1", "vsw-brought2"]})
    ((_, message),) = messages(ONE_ZONE, [group, eri_configuration(group)])
    assert message.startswith("eRDMA group lists 2 brought vSwitches")


def self_rule(group, protocol: str = "all"):
    return res(SG_RULE, "self", {"type": "ingress", "ipProtocol": protocol, "portRange": "-1/-1",
                                 "securityGroupId": "sg-x", "sourceSecurityGroupId": "sg-x"},
               depends_on=(group.urn,),
               property_dependencies={"securityGroupId": (group.urn,), "sourceSecurityGroupId": (group.urn,)})


def test_erdma_security_group_without_self_rule_fails_with_it_passes():
    sg = res(SG, "sg", {"vpcId": "vpc-1"})
    group = group_over(switch("a", "cn-wulanchabu-a"))
    configuration = eri_configuration(group, sg)
    ((where, message),) = messages(SELF_RULE, [sg, group, configuration])
    assert where == sg.urn and "no ingress rule from itself on all protocols" in message
    ((_, message),) = messages(SELF_RULE, [sg, group, configuration, self_rule(sg, "tcp")])
    assert "no ingress rule from itself" in message
    assert messages(SELF_RULE, [sg, group, configuration, self_rule(sg)]) == []


def event_rule(names: list[str], **targets):
    return res(EVENT_RULE, "ev", {"ruleName": "spot", "eventPattern": {"product": "ECS", "nameLists": names},
                                  **targets})


def test_spot_without_interruption_rule_fails():
    spot = res(SC, "sc", {"spotStrategy": "SpotAsPriceGo"})
    ((where, message),) = messages(SPOT, [spot])
    assert where == spot.urn
    assert message.startswith(f"spot capacity but no CloudMonitor event rule for '{INTERRUPTION}'")
    # A rule for another event, or one that delivers nowhere, is no interruption path.
    assert messages(SPOT, [spot, event_rule(["Instance:StateChange"], mnsParameters={"queue": "q"})])
    assert messages(SPOT, [spot, event_rule([INTERRUPTION])])


def test_spot_with_interruption_rule_passes_and_on_demand_needs_none():
    spot = res(SC, "sc", {"spotStrategy": "SpotWithPriceLimit"})
    rule = event_rule([INTERRUPTION], mnsParameters={"queue": "gpufleet-spot", "id": "1"})
    assert messages(SPOT, [spot, rule]) == []
    assert messages(SPOT, [res(SC, "sc", {"spotStrategy": "NoSpot"}), res(LT, "lt", {})]) == []
    fleet = res(APG, "apg", {"spotTargetCapacity": 2, "totalTargetCapacity": 4})
    assert messages(SPOT, [fleet])


def test_budget_reads_a_scaling_groups_max_size_and_its_configurations_type():
    group = res(ASG, "g", {"maxSize": 4})
    configuration = res(SC, "sc", {"scalingGroupId": "asg-1", "instanceTypes": ["ecs.ebmgn8v.48xlarge"]},
                        depends_on=(group.urn,))
    config = {"maxHourlyUsd": 100, "region": "cn-wulanchabu"}
    ((where, message),) = messages("hourly-budget", [group, configuration], config)
    assert where == urn(ASG, "g")
    assert message.startswith("no price for ecs.ebmgn8v.48xlarge in cn-wulanchabu (g)")
