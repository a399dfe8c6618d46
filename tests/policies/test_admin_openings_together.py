"""The pack judges the rules of one security group as one set, on every cloud and without the spec: public ranges
that are each narrow enough but too wide together, spread over inline rules and separate rule resources of one
group (Alibaba makes one rule resource per admin CIDR), are refused; the same ranges over different groups, or one
range repeated, pass. Azure tags count by what they stand for: only VirtualNetwork and AzureLoadBalancer are private.
"""

from __future__ import annotations

from ipaddress import IPv4Network, IPv6Network, ip_network
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stack_rule_args import res

from gpufleet.plan.policy_runner import run_policies
from gpufleet.plan.record import RecordedResource
from gpufleet.stackfile.address_ranges import MAX_PUBLIC_PREFIX, public_addresses
from policies.registry import RULES

Net = IPv4Network | IPv6Network
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

AWS_SG, AWS_RULE = "aws:ec2/securityGroup:SecurityGroup", "aws:ec2/securityGroupRule:SecurityGroupRule"
AWS_VPC_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
ALI_SG, ALI_RULE = "alicloud:ecs/securityGroup:SecurityGroup", "alicloud:ecs/securityGroupRule:SecurityGroupRule"
NSG, AZ_RULE = "azure-native:network:NetworkSecurityGroup", "azure-native:network:SecurityRule"


@st.composite
def narrow_public_sets(draw: Any) -> list[Net]:
    """2 to 5 distinct public ranges of the widest allowed prefix (each passes alone), one address family."""
    version = draw(st.sampled_from([4, 6]))
    bits, prefix = (32, MAX_PUBLIC_PREFIX[4]) if version == 4 else (128, MAX_PUBLIC_PREFIX[6])
    starts = draw(st.sets(st.integers(0, 2 ** prefix - 1), min_size=2, max_size=5))
    nets = [ip_network((start << (bits - prefix), prefix)) for start in sorted(starts)]
    nets = [net for net in nets if public_addresses(net) == net.num_addresses]
    if len(nets) < 2:
        from hypothesis import reject

        reject()
    return nets


def _aws(nets: list[Net], groups: int = 1) -> list[RecordedResource]:
    sgs = [res(AWS_SG, f"sg{g}", {"ingress": []}) for g in range(groups)]
    out: list[RecordedResource] = list(sgs)
    for index, net in enumerate(nets):
        sg = sgs[index % groups]
        family = "cidrBlocks" if net.version == 4 else "ipv6CidrBlocks"
        if index == 0:  # the first one inline, the others as rule resources of both kinds
            sgs[0].inputs["ingress"].append({"protocol": "tcp", "fromPort": 22, "toPort": 22, family: [str(net)]})
            continue
        deps = {"securityGroupId": (sg.urn,)}
        if index % 2:
            inputs = {"type": "ingress", "protocol": "tcp", "fromPort": 22, "toPort": 22, family: [str(net)],
                      "securityGroupId": "sg-x"}
            out.append(res(AWS_RULE, f"r{index}", inputs, (sg.urn,), deps))
        else:
            inputs = {"ipProtocol": "-1", "cidrIpv4" if net.version == 4 else "cidrIpv6": str(net),
                      "securityGroupId": "sg-x"}
            out.append(res(AWS_VPC_RULE, f"r{index}", inputs, (sg.urn,), deps))
    return out


def _alicloud(nets: list[Net], groups: int = 1) -> list[RecordedResource]:
    sgs = [res(ALI_SG, f"sg{g}", {"vpcId": "vpc-1"}) for g in range(groups)]
    rules = [res(ALI_RULE, f"ssh-{i}", {"type": "ingress", "ipProtocol": "tcp", "portRange": "22/22",
                                        "policy": "accept", "securityGroupId": "sg-x",
                                        "cidrIp" if net.version == 4 else "ipv6CidrIp": str(net)},
                 (sgs[i % groups].urn,), {"securityGroupId": (sgs[i % groups].urn,)})
             for i, net in enumerate(nets)]
    return [*sgs, *rules]


def _inbound(name: str, sources: list[str]) -> dict[str, Any]:
    return {"name": name, "direction": "Inbound", "access": "Allow", "protocol": "Tcp", "priority": 100,
            "destinationPortRange": "22", "sourceAddressPrefixes": sources}


def _azure(nets: list[Net], groups: int = 1) -> list[RecordedResource]:
    nsgs = [res(NSG, f"nsg{g}", {"securityRules": []}) for g in range(groups)]
    nsgs[0].inputs["securityRules"].append(_inbound("ssh-0", [str(nets[0])]))
    rules = [res(AZ_RULE, f"ssh-{i}", {**_inbound(f"ssh-{i}", [str(net)]), "networkSecurityGroupName": "nsg",
                                       "resourceGroupName": "rg"},
                 (nsgs[i % groups].urn,), {"networkSecurityGroupName": (nsgs[i % groups].urn,)})
             for i, net in enumerate(nets) if i]
    return [*nsgs, *rules]


BUILDERS = {"aws": _aws, "alicloud": _alicloud, "azure": _azure}


def refusals(cloud: str, resources: list[RecordedResource], *shown: str) -> list[str]:
    """Mandatory violations of the cloud's whole pack part whose message names every one of `shown`."""
    report = run_policies(resources, {}, [rule.policy for rule in RULES if rule.cloud == cloud])
    return [v.message for v in report.violations if v.level == "mandatory" and all(s in v.message for s in shown)]


@SETTINGS
@given(st.sampled_from(sorted(BUILDERS)), narrow_public_sets())
def test_narrow_ranges_too_wide_together_in_one_group_are_refused(cloud: str, nets: list[Net]) -> None:
    found = refusals(cloud, BUILDERS[cloud](nets), *map(str, nets))
    assert found, f"{cloud}: {nets} over one group's rules passed"
    assert any("together" in message and "public IPv" in message for message in found), found


@SETTINGS
@given(st.sampled_from(sorted(BUILDERS)), narrow_public_sets())
def test_the_same_ranges_over_separate_groups_pass(cloud: str, nets: list[Net]) -> None:
    resources = BUILDERS[cloud](nets, groups=len(nets))
    assert refusals(cloud, resources, "admin") == [] and refusals(cloud, resources, "public IPv") == []


@SETTINGS
@given(st.sampled_from(sorted(BUILDERS)), narrow_public_sets())
def test_one_range_repeated_over_rules_is_one_range(cloud: str, nets: list[Net]) -> None:
    assert refusals(cloud, BUILDERS[cloud]([nets[0]] * 3), "public IPv") == []


@SETTINGS
@given(narrow_public_sets())
def test_a_brought_groups_rules_are_judged_together_by_its_id(nets: list[Net]) -> None:
    rules = [res(ALI_RULE, f"ssh-{i}", {"type": "ingress", "ipProtocol": "all", "portRange": "-1/-1",
                                        "policy": "accept", "securityGroupId": "sg-brought",
                                        "cidrIp" if net.version == 4 else "ipv6CidrIp": str(net)})
             for i, net in enumerate(nets)]
    assert refusals("alicloud", rules, "sg-brought", *map(str, nets))


def test_an_nsg_s_inline_rules_are_one_set() -> None:
    nsg = res(NSG, "nsg", {"securityRules": [_inbound("a", ["198.51.99.0/24"]), _inbound("b", ["203.0.112.0/24"])]})
    (message,) = refusals("azure", [nsg], "198.51.99.0/24", "203.0.112.0/24")
    assert "together 512 public IPv4 addresses" in message


service_tags = st.from_regex(r"[A-Z][A-Za-z]{2,20}(\.[A-Za-z]{4,14})?", fullmatch=True).filter(
    lambda tag: tag.lower() not in ("virtualnetwork", "azureloadbalancer"))


@SETTINGS
@given(st.one_of(service_tags, st.sampled_from(["AzureCloud", "AzureCloud.westeurope", "Storage", "Internet", "*",
                                                 "Any", "GatewayManager", "virtualnetwork.westeurope"])))
def test_service_tags_are_public_space(tag: str) -> None:
    nsg = res(NSG, "nsg", {"securityRules": [_inbound("a", [tag])]})
    rule = res(AZ_RULE, "r", {**_inbound("r", [tag]), "networkSecurityGroupName": "nsg", "resourceGroupName": "rg"})
    assert refusals("azure", [nsg], tag, "public address space")
    assert refusals("azure", [rule], tag, "public address space")


def test_private_tags_pass() -> None:
    rules = [_inbound("vnet", ["VirtualNetwork"]), _inbound("lb", ["AzureLoadBalancer"]),
             _inbound("office", ["198.51.99.0/24"])]
    nsg = res(NSG, "nsg", {"securityRules": rules})
    assert refusals("azure", [nsg], "inbound") == []


def test_only_a_stack_with_managed_lustre_admits_azure_monitor_and_cannot_widen_it() -> None:
    """AzureMonitor into the Lustre subnet is Microsoft's documented requirement: the allowance is derived from the
    spec (shared storage on Azure), names that one tag, and a stack cannot write it."""
    import copy

    import pytest
    from conftest import read_cluster

    from gpufleet.pack_config.derive import policy_pack_config
    from gpufleet.prepare import prepare
    from gpufleet.stackfile import SpecInvalid

    def pack(stack: str, **policy: Any) -> dict[str, Any]:
        config = {"azure-native:location": read_cluster(stack)["region"], "gpufleet:cluster": read_cluster(stack),
                  **({"gpufleet:policy": policy} if policy else {})}
        return policy_pack_config(copy.deepcopy(config), prepare(copy.deepcopy(config)), None)

    assert pack("azure-train-ndh100")["azure-no-internet-admin-inbound"]["allowedServiceTags"] == ["AzureMonitor"]
    assert "azure-no-internet-admin-inbound" not in pack("azure-infer-a100")
    with pytest.raises(SpecInvalid, match="derived from the stack's spec"):
        pack("azure-train-ndh100", **{"azure-no-internet-admin-inbound": {"allowedServiceTags": ["AzureCloud"]}})
    nsg = res(NSG, "nsg", {"securityRules": [_inbound("monitor", ["AzureMonitor"]), _inbound("cloud", ["AzureCloud"])]})
    settings = {"azure-no-internet-admin-inbound": {"allowedServiceTags": ["AzureMonitor"]}}
    report = run_policies([nsg], settings, [rule.policy for rule in RULES if rule.name in settings])
    (violation,) = report.violations
    assert "AzureCloud (public address space)" in violation.message and "AzureMonitor (public" not in violation.message
