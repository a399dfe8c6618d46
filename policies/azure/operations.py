"""Azure operations rules: GPU metrics on every scale set, metric alerts that notify someone, and a shared
Azure Managed Lustre file system on a customer key and reachable only from the node subnet.

Every check skips values it cannot see (unknown during preview) and fails only on known-bad values.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..meta import ADVISORY, MANDATORY, Config, Node, Props, Rule, Stack, resource_rule, stack_rule
from ..props import UNKNOWN, base64_text, get, items
from .resource_types import ACTION_GROUP, AML_FILESYSTEM, METRIC_ALERT, NSG, SECURITY_RULE, SUBNET, VM_PROFILE, VMSS

# The DCGM watch that publishes the GPU metrics (components/bootstrap: the unit it installs).
GPU_METRICS_MARK = "gpufleet-gpu-health.service"
# Service tags the file system's subnet must admit: Azure Monitor (configure-network-security-group.md).
SERVICE_SOURCES = ("azuremonitor",)


def check_gpu_metrics(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    text = base64_text(get(props, VM_PROFILE, "osProfile", "customData"))
    if text is UNKNOWN:
        return
    if GPU_METRICS_MARK not in text:
        yield (
            "the scale set ships no GPU metrics (no gpufleet-gpu-health in its custom data): set "
            "monitoring.gpu_metrics: true so utilisation, memory, power, temperature and DCGM errors are seen"
        )


def check_alert_target(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    actions = items(props, "actions")
    if actions is UNKNOWN:
        return
    if not [a for a in actions or [] if get(a, "actionGroupId")]:
        yield "the alert notifies no one (no action group): set monitoring.alarms.target (create or an action group id)"


# Every receiver list an action group takes (Microsoft.Insights/actionGroups properties).
RECEIVERS = ("emailReceivers", "smsReceivers", "webhookReceivers", "itsmReceivers", "azureAppPushReceivers",
             "automationRunbookReceivers", "voiceReceivers", "logicAppReceivers", "azureFunctionReceivers",
             "armRoleReceivers", "eventHubReceivers", "incidentReceivers")


def check_action_group_recipients(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    lists = [items(props, key) for key in RECEIVERS]
    if any(found is UNKNOWN for found in lists):
        return
    if not any(lists):
        yield (
            "the action group has no receivers: its alerts and budget notifications reach no one; set "
            "monitoring.alarms.emails (each address gets Azure Monitor's mails) or bring an action group with receivers"
        )


def check_lustre_customer_key(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    key = get(props, "encryptionSettings", "keyEncryptionKey", "keyUrl")
    if key is UNKNOWN:
        return
    if not key:
        yield (
            "the shared file system is encrypted with a Microsoft-managed key: set encryption_settings."
            "key_encryption_key to a Key Vault key (RSA 2048) and a user-assigned identity that may use it"
        )


def _sources(rule: Any) -> list[Any]:
    several = get(rule, "sourceAddressPrefixes")
    return [s for s in [get(rule, "sourceAddressPrefix"), *(several if isinstance(several, list) else [])] if s]


def _inbound_rules(stack: Stack, nsg: Node) -> Iterator[tuple[str, Any]]:
    """(urn, rule) of the group's inbound rules: inline, and SecurityRule resources on it."""
    for rule in items(nsg.props, "securityRules") or []:
        if get(rule, "direction") == "Inbound":
            yield nsg.urn, rule
    for node in stack.dependents_of(nsg, SECURITY_RULE):
        if get(node.props, "direction") == "Inbound":
            yield node.urn, node.props


def _denies_the_rest(rules: list[Any]) -> bool:
    return any(
        get(rule, "access") == "Deny" and "*" in _sources(rule) and get(rule, "destinationPortRange") == "*"
        for rule in rules
    )


def check_lustre_nodes_only(stack: Stack, config: Config) -> Iterator[tuple[str | None, str]]:
    scale_sets = stack.of_type(VMSS)
    node_prefixes = {
        get(subnet.props, "addressPrefix") for subnet in stack.of_type(SUBNET)
        if any(scale_set.depends_on(subnet.urn) for scale_set in scale_sets)
    }
    for fs in stack.of_type(AML_FILESYSTEM):
        subnets = stack.dependencies_of(fs, SUBNET, prop="filesystemSubnet")
        if not subnets:
            continue  # a brought subnet: not judged offline
        subnet = subnets[0]
        groups = stack.dependencies_of(subnet, NSG, prop="networkSecurityGroup")
        if not groups:
            yield subnet.urn, "the shared file system's subnet has no network security group: the whole VNet reaches it"
            continue
        if items(groups[0].props, "securityRules") is UNKNOWN:
            continue
        allowed = {*node_prefixes, get(subnet.props, "addressPrefix")}
        rules = list(_inbound_rules(stack, groups[0]))
        for urn, rule in rules:
            strangers = [s for s in _sources(rule) if s is not UNKNOWN and s not in allowed
                         and str(s).lower() not in SERVICE_SOURCES]
            if get(rule, "access") == "Allow" and strangers:
                yield urn, (
                    f"the shared file system's subnet admits {', '.join(map(str, strangers))} (rule "
                    f"{get(rule, 'name')}): admit only the node subnet"
                )
        if not _denies_the_rest([rule for _, rule in rules]):
            yield groups[0].urn, (
                "the shared file system's subnet admits the whole VNet (Azure's default AllowVnetInBound): add an "
                "inbound rule denying every other source"
            )


RULES: list[Rule] = [
    resource_rule(
        "azure-node-gpu-metrics",
        "Scale sets ship GPU metrics (gpufleet-gpu-health: DCGM fields as custom metrics of the scale set).",
        ADVISORY,
        "azure",
        [VMSS],
        check_gpu_metrics,
    ),
    resource_rule(
        "azure-alert-has-target",
        "Metric alerts notify an action group.",
        ADVISORY,
        "azure",
        [METRIC_ALERT],
        check_alert_target,
    ),
    resource_rule(
        "azure-action-group-has-recipients",
        "An action group the stack creates for its alerts and budget notifications has at least one receiver.",
        MANDATORY,
        "azure",
        [ACTION_GROUP],
        check_action_group_recipients,
    ),
    resource_rule(
        "azure-shared-fs-customer-key",
        "The shared Azure Managed Lustre file system is encrypted with a customer-managed Key Vault key.",
        MANDATORY,
        "azure",
        [AML_FILESYSTEM],
        check_lustre_customer_key,
    ),
    stack_rule(
        "azure-shared-fs-nodes-only",
        "The shared file system's subnet admits only the node subnet (and itself, and Azure Monitor) and denies the "
        "rest.",
        MANDATORY,
        "azure",
        [AML_FILESYSTEM, SUBNET, NSG, SECURITY_RULE, VMSS],
        check_lustre_nodes_only,
    ),
]
