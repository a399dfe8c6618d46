"""Alibaba Cloud operations rules: GPU metrics on every node group, alarms that notify someone or act,
a contact group gpufleet creates that holds someone, and a shared NAS/CPFS file system on the customer key and
reachable only from the nodes' vSwitches.

gpufleet builds no shared file system on Alibaba Cloud (pulumi-alicloud 4.0.0 takes a customer key for extreme
NAS only, see the backend's operation gaps); the two file-system rules keep one added by hand to the same bar.
Every check skips values it cannot see (unknown during preview) and fails only on known-bad values.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from ..meta import ADVISORY, MANDATORY, Config, Props, Rule, Stack, resource_rule, stack_rule
from ..props import UNKNOWN, as_int, base64_text, get, items
from .resource_types import (
    ALARM_CONTACT_GROUP,
    ARMS_ALERT_CONTACT_GROUP,
    ARMS_ALERT_RULE,
    CUSTOM_METRIC_RULE,
    ESS_ALARM,
    GROUP_METRIC_RULE,
    LAUNCH_TEMPLATE,
    NAS_ACCESS_RULE,
    NAS_FILE_SYSTEM,
    SCALING_CONFIGURATION,
    VSWITCH,
)

# The node script that publishes the DCGM fields to CloudMonitor (components.bootstrap.cloud_init).
GPU_METRICS_MARK = "/usr/local/sbin/gpufleet-gpu-health"
# nas.FileSystem encrypt_type: 2 is a user-managed KMS key (0 none, 1 NAS-managed).
CUSTOMER_KEY = 2


def check_gpu_metrics(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    text = base64_text(get(props, "userData"))
    if text is UNKNOWN:
        return
    if GPU_METRICS_MARK not in text:
        yield (
            "the node group ships no GPU metrics (no gpufleet-gpu-health in its user data): set "
            "monitoring.gpu_metrics: true so DCGM errors and utilisation reach CloudMonitor"
        )


def check_alarm_target(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    if resource_type == ESS_ALARM:
        actions = items(props, "alarmActions")
        if actions is not UNKNOWN and not actions:
            yield "the alarm task runs no scaling rule (alarm_actions is empty): name the rule's ari"
        return
    if resource_type == ARMS_ALERT_RULE:
        notify, policy = get(props, "notifyType"), get(props, "dispatchRuleId")
        if notify is not UNKNOWN and policy is not UNKNOWN and (notify != "DISPATCH_RULE" or not policy):
            yield ("the ARMS alert rule goes through no notification policy (notify_type DISPATCH_RULE with a "
                   "dispatch_rule_id): its alerts reach no one")
        return
    # The provider resource's input is contactGroups; gpufleet's dynamic rule takes PutCustomMetricRule's names.
    contacts = get(props, "contact_groups" if resource_type == CUSTOM_METRIC_RULE else "contactGroups")
    if contacts is not UNKNOWN and not contacts:
        yield ("the alarm rule notifies no one (contact_groups is empty): set monitoring.alarms.target (create or a "
               "CloudMonitor contact group name)")


def check_contact_group_has_contacts(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    contacts = items(props, "contactIds" if resource_type == ARMS_ALERT_CONTACT_GROUP else "contacts")
    if contacts is not UNKNOWN and not contacts:
        yield ("the alarm contact group has no contacts: its alarms and interruption notices reach no one; set "
               "monitoring.alarms.emails (each address follows CloudMonitor's activation mail) or bring a contact "
               "group with contacts")


def check_file_system_customer_key(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    encrypt, key = get(props, "encryptType"), get(props, "kmsKeyId")
    if encrypt is UNKNOWN or key is UNKNOWN:
        return
    if as_int(encrypt) != CUSTOMER_KEY or not key:
        yield (
            "the shared file system is not encrypted with a customer KMS key: set encrypt_type = 2 and kms_key_id "
            "to the stack's key (storage.kms_key); file system types that take no customer key cannot hold it"
        )


def _networks(stack: Stack) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    found = []
    for vswitch in stack.of_type(VSWITCH):
        cidr = get(vswitch.props, "cidrBlock")
        if isinstance(cidr, str):
            found.append(ipaddress.ip_network(cidr, strict=False))
    return found


def check_file_system_nodes_only(stack: Stack, config: Config) -> Iterator[tuple[str | None, str]]:
    """Every NAS access rule of the stack admits addresses inside the stack's vSwitches (where the nodes are)."""
    nodes = _networks(stack)
    for rule in stack.of_type(NAS_ACCESS_RULE):
        for prop in ("sourceCidrIp", "ipv6SourceCidrIp"):
            source = get(rule.props, prop)
            if source is UNKNOWN or not source:
                continue
            try:
                network = ipaddress.ip_network(str(source), strict=False)
            except ValueError:
                yield rule.urn, f"the file system's access rule admits {source!r}, which is not a CIDR"
                continue
            if not any(network.version == n.version and network.subnet_of(n) for n in nodes):  # type: ignore[arg-type]
                yield rule.urn, (
                    f"the file system's access rule admits {source}, beyond the nodes' vSwitches: admit only the "
                    "node vSwitch CIDRs"
                )


RULES: list[Rule] = [
    resource_rule(
        "alicloud-node-gpu-metrics",
        "Node groups ship GPU metrics (gpufleet-gpu-health: DCGM errors and utilisation to CloudMonitor).",
        ADVISORY,
        "alicloud",
        [SCALING_CONFIGURATION, LAUNCH_TEMPLATE],
        check_gpu_metrics,
    ),
    resource_rule(
        "alicloud-alarm-has-target",
        "CloudMonitor alarm rules notify a contact group; ESS alarm tasks run a scaling rule; ARMS alert rules go "
        "through a notification policy.",
        ADVISORY,
        "alicloud",
        [GROUP_METRIC_RULE, CUSTOM_METRIC_RULE, ESS_ALARM, ARMS_ALERT_RULE],
        check_alarm_target,
    ),
    resource_rule(
        "alicloud-alarm-contacts",
        "A CloudMonitor alarm contact group or ARMS alert contact group the stack creates holds at least one contact.",
        MANDATORY,
        "alicloud",
        [ALARM_CONTACT_GROUP, ARMS_ALERT_CONTACT_GROUP],
        check_contact_group_has_contacts,
    ),
    resource_rule(
        "alicloud-shared-fs-customer-key",
        "A shared NAS/CPFS file system is encrypted with a customer KMS key (encrypt_type 2).",
        MANDATORY,
        "alicloud",
        [NAS_FILE_SYSTEM],
        check_file_system_customer_key,
    ),
    stack_rule(
        "alicloud-shared-fs-nodes-only",
        "A shared file system's access rules admit only the nodes' vSwitch CIDRs.",
        MANDATORY,
        "alicloud",
        [NAS_ACCESS_RULE, VSWITCH],
        check_file_system_nodes_only,
    ),
]
