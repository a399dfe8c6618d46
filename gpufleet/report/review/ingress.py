"""Openings: each inbound rule of a security group (AWS, Alibaba) or network security group (Azure) as one line,
`allow tcp 22 from 8.8.8.0/24`, under the group it opens. A source that is another group is named by the recorded
resource it came from; an id the offline engine answered would mean nothing to a reviewer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..words import resource_name
from .model import Resource, Resources, ReviewLine, shown

AWS_GROUP = "aws:ec2/securityGroup:SecurityGroup"
AWS_INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
AWS_LEGACY_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
AZURE_NSG = "azure-native:network:NetworkSecurityGroup"
AZURE_RULE = "azure-native:network:SecurityRule"
AZURE_APPLICATION_GROUP = "azure-native:network:ApplicationSecurityGroup"
ALICLOUD_RULE = "alicloud:ecs/securityGroupRule:SecurityGroupRule"


def _ports(low: Any, high: Any, protocol: str) -> str:
    if protocol in ("-1", "all", "*"):
        return "all traffic"
    if str(low) in ("None", "-1") and str(high) in ("None", "-1"):
        return f"{protocol} all ports"
    return f"{protocol} {low}" if str(low) == str(high) or high is None else f"{protocol} {low}-{high}"


def _line(urn: str, subject: str, access: str, what: str, sources: list[str], description: Any) -> ReviewLine:
    text = f"{access} {what} from {shown(sources) or 'nowhere'}"
    return ReviewLine("ingress", urn, subject, f"{text} ({description})" if description else text)


def _group_sources(rules: Resources, resource: Resource, prop: str, ids: list[Any]) -> list[str]:
    names = rules.dependency_names(resource, prop)
    if len(names) == len(ids):  # one dependency per id: the names are the groups
        return [f"group {name}" for name in names]
    return [f"group {group_id}" for group_id in ids]


def _aws_inline(rules: Resources, group: Resource) -> list[ReviewLine]:
    lines = []
    for rule in (group.get("inputs") or {}).get("ingress") or []:
        sources = [*(rule.get("cidrBlocks") or []), *(rule.get("ipv6CidrBlocks") or []),
                   *(rule.get("prefixListIds") or [])]
        groups = rule.get("securityGroups") or []
        sources += _group_sources(rules, group, "ingress", groups) if groups else []
        sources += ["itself"] if rule.get("self") else []
        protocol = str(rule.get("protocol", ""))
        lines.append(_line(group["urn"], resource_name(group["urn"]), "allow",
                           _ports(rule.get("fromPort"), rule.get("toPort"), protocol), sources,
                           rule.get("description")))
    return lines


def _aws_rule(rules: Resources, rule: Resource) -> ReviewLine | None:
    inputs = rule.get("inputs") or {}
    if rule["type"] == AWS_LEGACY_RULE and inputs.get("type") != "ingress":
        return None
    sources = [*(inputs.get(key) for key in ("cidrIpv4", "cidrIpv6", "prefixListId") if inputs.get(key)),
               *(inputs.get("cidrBlocks") or []), *(inputs.get("ipv6CidrBlocks") or [])]
    for prop in ("referencedSecurityGroupId", "sourceSecurityGroupId"):
        if inputs.get(prop):
            sources += _group_sources(rules, rule, prop, [inputs[prop]])
    sources += ["itself"] if inputs.get("self") else []
    protocol = str(inputs.get("ipProtocol", inputs.get("protocol", "")))
    groups = rules.dependency_names(rule, "securityGroupId")
    return _line(rule["urn"], groups[0] if groups else resource_name(rule["urn"]), "allow",
                 _ports(inputs.get("fromPort"), inputs.get("toPort"), protocol), sources, inputs.get("description"))


def _application_groups(rules: Resources, resource: Resource, prop: str, ids: list[Any]) -> list[str]:
    """An Azure rule's source application security groups, named by the recorded groups its NSG depends on."""
    names = [resource_name(found["urn"]) for found in rules.dependencies(resource, prop)
             if found["type"] == AZURE_APPLICATION_GROUP]
    if len(names) == len(ids):
        return [f"application security group {name}" for name in names]
    return [f"application security group {group_id}" for group_id in ids]


def _azure_rule(rules: Resources, resource: Resource, rule: Mapping[str, Any]) -> ReviewLine | None:
    urn, subject = resource["urn"], resource_name(resource["urn"])
    if rule.get("direction") != "Inbound":
        return None
    ports = rule.get("destinationPortRanges") or [rule.get("destinationPortRange")]
    protocol = str(rule.get("protocol", "*")).lower()
    if ports == ["*"]:
        what = "all traffic" if protocol == "*" else f"{protocol} all ports"
    else:
        what = f"{'any protocol' if protocol == '*' else protocol} {shown([p for p in ports if p])}"
    sources = ["anywhere" if s == "*" else s
               for s in rule.get("sourceAddressPrefixes") or [rule.get("sourceAddressPrefix")] if s]
    groups = [group.get("id") for group in rule.get("sourceApplicationSecurityGroups") or []]
    prop = "securityRules" if resource["type"] == AZURE_NSG else "sourceApplicationSecurityGroups"
    sources += _application_groups(rules, resource, prop, groups) if groups else []
    access = str(rule.get("access", "")).lower()
    return _line(urn, subject, access, what, sources, rule.get("description"))


def _alicloud_rule(rules: Resources, rule: Resource) -> ReviewLine | None:
    inputs = rule.get("inputs") or {}
    if inputs.get("type") != "ingress":
        return None
    sources = [inputs[key] for key in ("cidrIp", "ipv6CidrIp", "prefixListId") if inputs.get(key)]
    if inputs.get("sourceSecurityGroupId"):
        sources += _group_sources(rules, rule, "sourceSecurityGroupId", [inputs["sourceSecurityGroupId"]])
    low, _, high = str(inputs.get("portRange", "-1/-1")).partition("/")
    access = "allow" if inputs.get("policy", "accept") == "accept" else "deny"
    groups = rules.dependency_names(rule, "securityGroupId")
    return _line(rule["urn"], groups[0] if groups else resource_name(rule["urn"]), access,
                 _ports(low, high, str(inputs.get("ipProtocol", "all"))), sources, inputs.get("description"))


def ingress_lines(rules: Resources) -> list[ReviewLine]:
    """Every inbound rule the plan records, on every cloud."""
    lines: list[ReviewLine | None] = []
    for resource in rules.all:
        kind = resource["type"]
        if kind == AWS_GROUP:
            lines += _aws_inline(rules, resource)
        elif kind in (AWS_INGRESS_RULE, AWS_LEGACY_RULE):
            lines.append(_aws_rule(rules, resource))
        elif kind == AZURE_NSG:
            lines += [_azure_rule(rules, resource, rule)
                      for rule in (resource.get("inputs") or {}).get("securityRules") or []]
        elif kind == AZURE_RULE:
            lines.append(_azure_rule(rules, resource, resource.get("inputs") or {}))
        elif kind == ALICLOUD_RULE:
            lines.append(_alicloud_rule(rules, resource))
    return [line for line in lines if line is not None]
