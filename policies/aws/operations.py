"""AWS operations rules: GPU metrics on every node group, alarms that notify someone, and a shared
file system on the customer key and reachable only from the nodes.

Every check skips values it cannot see (unknown during preview) and fails only on known-bad values.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..meta import ADVISORY, MANDATORY, Config, Props, Rule, Stack, resource_rule, stack_rule
from ..props import UNKNOWN, base64_text, eks_supplies_the_image, get, items
from .resource_types import (
    BUDGET,
    LAUNCH_TEMPLATE,
    LUSTRE_FILE_SYSTEM,
    METRIC_ALARM,
    SECURITY_GROUP,
    SECURITY_GROUP_RULE,
    SNS_SUBSCRIPTION,
    SNS_TOPIC,
    VPC_INGRESS_RULE,
)

# The CloudWatch agent measurement set that ships GPU metrics (CloudWatch user guide, CloudWatch-Agent-NVIDIA-GPU).
GPU_METRICS_MARK = '"nvidia_gpu"'


def check_gpu_metrics(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    if eks_supplies_the_image(props):
        return  # an EKS managed node group's template: CPU system nodes, no GPU to watch
    text = base64_text(get(props, "userData"))
    if text is UNKNOWN:
        return
    if GPU_METRICS_MARK not in text:
        yield (
            "the node group ships no GPU metrics (no CloudWatch agent nvidia_gpu configuration in its user data): "
            "set monitoring.gpu_metrics: true so utilisation, memory, power, temperature and DCGM errors are seen"
        )


def check_alarm_target(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    actions = items(props, "alarmActions")
    if actions is UNKNOWN:
        return
    if not actions:
        yield "the alarm notifies no one (alarm_actions is empty): set monitoring.alarms.target (create or a topic ARN)"


def check_lustre_customer_key(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    key = get(props, "kmsKeyId")
    if key is UNKNOWN:
        return
    if not key or (isinstance(key, str) and "alias/aws/" in key):
        yield (
            "the shared file system is encrypted with the AWS-managed key: use deployment_type PERSISTENT_2 (or "
            "PERSISTENT_1) with kms_key_id the stack's customer-managed key (storage.kms_key)"
        )


def _ingress_of(stack: Stack, group_ids: set[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(urn, rule) of every ingress rule on the given security groups: inline, ec2 rules and vpc rules."""
    for node in stack.of_type(SECURITY_GROUP):
        if get(node.props, "id") in group_ids or node.urn in group_ids:
            rules = items(node.props, "ingress")
            for rule in [] if rules is UNKNOWN else rules:  # an unknown list is judged once known
                if isinstance(rule, dict):
                    cidrs = [*(rule.get("cidrBlocks") or []), *(rule.get("ipv6CidrBlocks") or [])]
                    yield node.urn, {"cidrs": cidrs, "prefix_lists": rule.get("prefixListIds") or [],
                                     "groups": rule.get("securityGroups") or [], "self": rule.get("self")}
    for node in stack.of_type(SECURITY_GROUP_RULE, VPC_INGRESS_RULE):
        props = node.props
        if get(props, "securityGroupId") not in group_ids:
            continue
        if node.type == SECURITY_GROUP_RULE and get(props, "type") != "ingress":
            continue
        cidrs = [get(props, "cidrIpv4"), get(props, "cidrIpv6"), *(get(props, "cidrBlocks") or []),
                 *(get(props, "ipv6CidrBlocks") or [])]
        groups = [get(props, "referencedSecurityGroupId"), get(props, "sourceSecurityGroupId")]
        yield node.urn, {"cidrs": [c for c in cidrs if c], "prefix_lists": [p for p in [get(props, "prefixListId"),
                         *(get(props, "prefixListIds") or [])] if p], "groups": [g for g in groups if g],
                         "self": get(props, "self")}


def _node_groups(stack: Stack) -> set[Any] | None:
    """The security groups on the nodes' network interfaces (launch templates); None while one is unknown."""
    found: set[Any] = set()
    for template in stack.of_type(LAUNCH_TEMPLATE):
        interfaces = items(template.props, "networkInterfaces")
        if interfaces is UNKNOWN:
            return None
        lists = [items(interface, "securityGroups") for interface in interfaces]
        lists.append(items(template.props, "vpcSecurityGroupIds"))
        if any(groups is UNKNOWN for groups in lists):
            return None
        for groups in lists:
            found.update(groups)
    return found


def check_lustre_nodes_only(stack: Stack, config: Config) -> Iterator[tuple[str | None, str]]:
    nodes = _node_groups(stack)
    if nodes is None:  # which groups are the nodes' is not known yet: judged when it is
        return
    for fs in stack.of_type(LUSTRE_FILE_SYSTEM):
        own = get(fs.props, "securityGroupIds")
        if own is UNKNOWN or not isinstance(own, list):
            continue
        if not own:
            yield fs.urn, "the shared file system names no security group: it takes the VPC's default group"
            continue
        allowed = nodes | set(own)
        for urn, rule in _ingress_of(stack, set(own)):
            addresses = ", ".join(map(str, rule["cidrs"] + rule["prefix_lists"]))
            if addresses:
                yield urn, (
                    f"the shared file system's security group admits addresses ({addresses}): admit only the node "
                    "security group (referenced_security_group_id)"
                )
            strangers = [g for g in rule["groups"] if g is not UNKNOWN and g not in allowed]
            if strangers:
                yield urn, (
                    f"the shared file system's security group admits {', '.join(map(str, strangers))}, which is not "
                    "the node security group: admit only the nodes"
                )


def check_notified_topic_has_subscribers(stack: Stack, config: Config) -> Iterator[tuple[str | None, str]]:
    """A topic the stack creates that its alarms or budget notify must have a subscription, or every alarm and
    budget alert is dropped. Read from the engine's property dependencies (a topic's ARN is unknown in preview)."""
    subscriptions = stack.of_type(SNS_SUBSCRIPTION)
    subscribed = {urn for node in subscriptions for urn in node.property_dependencies.get("topic", ())}
    notifiers = stack.of_type(METRIC_ALARM, BUDGET)
    for topic in stack.of_type(SNS_TOPIC):
        if topic.urn in subscribed:
            continue
        if any(topic.urn in urns for node in notifiers for urns in node.property_dependencies.values()):
            yield topic.urn, (
                "the alarm topic has nobody subscribed: its alarms and budget alerts reach no one; set "
                "monitoring.alarms.emails (each address confirms SNS's mail) or bring a topic with subscribers"
            )


RULES: list[Rule] = [
    resource_rule(
        "aws-node-gpu-metrics",
        "Node groups ship GPU metrics (CloudWatch agent nvidia_gpu and the DCGM error watch).",
        ADVISORY,
        "aws",
        [LAUNCH_TEMPLATE],
        check_gpu_metrics,
    ),
    resource_rule(
        "aws-alarm-has-target",
        "CloudWatch alarms notify a target (a topic or a scaling policy).",
        ADVISORY,
        "aws",
        [METRIC_ALARM],
        check_alarm_target,
    ),
    resource_rule(
        "aws-shared-fs-customer-key",
        "The shared FSx for Lustre file system is encrypted with a customer-managed KMS key.",
        MANDATORY,
        "aws",
        [LUSTRE_FILE_SYSTEM],
        check_lustre_customer_key,
    ),
    stack_rule(
        "aws-alarm-topic-subscribed",
        "A topic the stack creates for its alarms and budget alerts has at least one subscription.",
        MANDATORY,
        "aws",
        [SNS_TOPIC, SNS_SUBSCRIPTION, METRIC_ALARM, BUDGET],
        check_notified_topic_has_subscribers,
    ),
    stack_rule(
        "aws-shared-fs-nodes-only",
        "The shared file system's security group admits only the node security group (and itself).",
        MANDATORY,
        "aws",
        [LUSTRE_FILE_SYSTEM, SECURITY_GROUP, SECURITY_GROUP_RULE, VPC_INGRESS_RULE, LAUNCH_TEMPLATE],
        check_lustre_nodes_only,
    ),
]
