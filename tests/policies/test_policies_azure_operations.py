"""Azure operations rules: GPU metrics on scale sets, alert targets, the shared file system's key and reach."""

from __future__ import annotations

import base64

from azure_rule_args import VMSS, messages, res, scale_set, validate
from pulumi_policy.proxy import UNKNOWN_ARRAY_VALUE, UNKNOWN_OBJECT_VALUE, UNKNOWN_STRING_VALUE
from stack_rule_args import urn

from gpufleet.plan.policy_runner import run_policies
from policies.registry import RULES_BY_NAME

ALERT = "azure-native:monitor:MetricAlert"
AMLFS = "azure-native:storagecache:AmlFilesystem"
SUBNET = "azure-native:network:Subnet"
NSG = "azure-native:network:NetworkSecurityGroup"
KEY_URL = "https://kv.vault.azure.net/keys/gpufleet-lustre/0123456789abcdef0123456789abcdef"
ACTION_GROUP = "/subscriptions/s/resourceGroups/rg/providers/microsoft.insights/actionGroups/ops"


def custom_data(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_scale_set_without_gpu_metrics_is_advised() -> None:
    props = scale_set(**{"virtualMachineProfile.osProfile": {"customData": custom_data("#cloud-config\n")}})
    (message,) = validate("azure-node-gpu-metrics", VMSS, props)
    assert "ships no GPU metrics" in message and "monitoring.gpu_metrics" in message


def test_scale_set_with_the_gpu_health_unit_passes() -> None:
    data = custom_data("#cloud-config\nruncmd: [[systemctl, enable, gpufleet-gpu-health.service]]\n")
    props = scale_set(**{"virtualMachineProfile.osProfile": {"customData": data}})
    assert validate("azure-node-gpu-metrics", VMSS, props) == []


def test_alert_without_action_group_is_advised() -> None:
    (message,) = validate("azure-alert-has-target", ALERT, {"scopes": ["x"], "actions": []})
    assert "notifies no one" in message


def test_alert_with_an_action_group_passes() -> None:
    assert validate("azure-alert-has-target", ALERT, {"actions": [{"actionGroupId": ACTION_GROUP}]}) == []


def test_lustre_on_a_microsoft_managed_key_fails() -> None:
    (message,) = validate("azure-shared-fs-customer-key", AMLFS, {"storageCapacityTiB": 8})
    assert "Microsoft-managed key" in message


def test_lustre_on_a_customer_key_passes() -> None:
    props = {"encryptionSettings": {"keyEncryptionKey": {"keyUrl": KEY_URL, "sourceVault": {"id": "v"}}}}
    assert validate("azure-shared-fs-customer-key", AMLFS, props) == []


NODES, LUSTRE = "10.42.0.0/17", "10.42.128.0/27"


def _rule(name: str, source: str, access: str = "Allow", port: str = "988") -> dict:
    return {"name": name, "direction": "Inbound", "access": access, "sourceAddressPrefix": source,
            "destinationPortRange": port, "protocol": "*" if access == "Deny" else "Tcp"}


def _stack(*rules: dict) -> list:
    nsg = res(NSG, "lustre", {"securityRules": list(rules)})
    node_subnet = res(SUBNET, "nodes", {"addressPrefix": NODES})
    subnet = res(SUBNET, "lustre", {"addressPrefix": LUSTRE}, depends_on=(nsg.urn,),
                 property_dependencies={"networkSecurityGroup": (nsg.urn,)})
    vmss = res(VMSS, "h100", scale_set(), depends_on=(node_subnet.urn,))
    fs = res(AMLFS, "fs", {"storageCapacityTiB": 8}, depends_on=(subnet.urn,),
             property_dependencies={"filesystemSubnet": (subnet.urn,)})
    return [nsg, node_subnet, subnet, vmss, fs]


DENY = _rule("deny-all-inbound", "*", access="Deny", port="*")


def test_lustre_subnet_open_to_the_vnet_fails() -> None:
    ((where, message),) = messages("azure-shared-fs-nodes-only", _stack(_rule("vnet", "VirtualNetwork"), DENY))
    assert where == urn(NSG, "lustre") and "admits VirtualNetwork" in message


def test_lustre_subnet_without_a_final_deny_fails() -> None:
    ((where, message),) = messages("azure-shared-fs-nodes-only", _stack(_rule("nodes", NODES)))
    assert where == urn(NSG, "lustre") and "AllowVnetInBound" in message


def test_lustre_subnet_open_to_the_nodes_itself_and_azure_monitor_passes() -> None:
    stack = _stack(_rule("nodes", NODES), _rule("servers", LUSTRE, port="*"), _rule("monitor", "AzureMonitor"), DENY)
    assert messages("azure-shared-fs-nodes-only", stack) == []


def test_shipped_stacks_pass_the_operations_rules(shipped_plans) -> None:
    names = {"azure-node-gpu-metrics", "azure-alert-has-target", "azure-shared-fs-customer-key",
             "azure-shared-fs-nodes-only"}
    for stack in ("azure-train-ndh100", "azure-infer-a100"):
        plan = shipped_plans[stack]
        assert plan.policies["evaluated"] > 0
        assert [v for v in plan.policies["violations"] if v["policy"] in names] == []


def test_operations_rules_skip_values_unknown_during_preview() -> None:
    names = ("azure-node-gpu-metrics", "azure-alert-has-target", "azure-shared-fs-customer-key",
             "azure-shared-fs-nodes-only")
    unknown = [
        res(VMSS, "h100", scale_set(**{"virtualMachineProfile.osProfile": {"customData": UNKNOWN_STRING_VALUE}})),
        res(ALERT, "xid", {"actions": UNKNOWN_ARRAY_VALUE}),
        res(NSG, "lustre", {"securityRules": UNKNOWN_ARRAY_VALUE}),
        res(SUBNET, "lustre", {"addressPrefix": UNKNOWN_STRING_VALUE}, depends_on=(urn(NSG, "lustre"),),
            property_dependencies={"networkSecurityGroup": (urn(NSG, "lustre"),)}),
        res(AMLFS, "fs", {"encryptionSettings": UNKNOWN_OBJECT_VALUE}, depends_on=(urn(SUBNET, "lustre"),),
            property_dependencies={"filesystemSubnet": (urn(SUBNET, "lustre"),)}),
    ]
    report = run_policies(unknown, {}, [RULES_BY_NAME[name].policy for name in names])
    assert [(v.policy, v.message) for v in report.violations] == []
