"""Azure operations options as the engine records them: GPU metrics in the bootstrap and the publisher role on the
scale set, alerts per group with their action group, idle scale-in on the GPU metric, the Consumption budget, and
Azure Managed Lustre on a key from the vault in a subnet open to the node subnet only; sizes Azure does not sell
exit 2."""

from __future__ import annotations

import base64
import gzip
import json

import pytest
from azure_plans import AUTOSCALE, INFER, NSG, TRAIN, VMSS, cloud_init, node_settings, one, plan_cli, shipped, variant
from bootstrap_node import Node, config, xid_lines
from conftest import of_type

from components.bootstrap.cloud_init import gpu_health_script
from components.bootstrap.operations import DCGM_UP_METRIC, GpuMetrics
from gpufleet.clouds.azure import mock_answers as mocks
from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile import SpecInvalid

ALERT = "azure-native:monitor:MetricAlert"
AMLFS = "azure-native:storagecache:AmlFilesystem"
SUBNET = "azure-native:network:Subnet"
KEY = "azure-native:keyvault:Key"
SCALE_SET_NAME = "gpufleet-train-dev-h100"


def test_training_bootstrap_runs_the_gpu_publisher_with_azures_commands() -> None:
    scale_set = one(shipped(TRAIN), VMSS)
    document = cloud_init(scale_set)
    (packed,) = [f for f in document["write_files"] if f["path"] == "/usr/local/sbin/gpufleet-gpu-health"]
    script = gzip.decompress(base64.b64decode(packed["content"])).decode()
    assert script == gpu_health_script("azure") and "monitoring.azure.com" in script
    assert "amazon-cloudwatch-agent" not in json.dumps(document)
    assert "gpufleet-gpu-health.service" in document["runcmd"][1] and "nvidia-dcgm.service" in document["runcmd"][1]
    settings = node_settings(scale_set)
    assert settings["GPUFLEET_METRICS_NAMESPACE"] == "gpufleet"
    assert settings["GPUFLEET_METRICS_GROUP"] == SCALE_SET_NAME and settings["GPUFLEET_REGION"] == "eastus"


def test_an_alert_fires_when_dcgm_stops_answering_a_node() -> None:
    # Before: a DCGM outage published 0 % utilisation and zero errors, and nothing alerted.
    (alert,) = [a.inputs for a in of_type(shipped(TRAIN), ALERT)
                if a.inputs["criteria"]["allOf"][0]["metricName"] == DCGM_UP_METRIC]
    (criterion,) = alert["criteria"]["allOf"]
    assert (criterion["timeAggregation"], criterion["operator"], criterion["threshold"]) == ("Minimum", "LessThan", 1)
    assert alert["windowSize"] == "PT1M" and "DCGM did not answer" in alert["description"]


def test_alerts_on_xid_ecc_nodecheck_and_low_utilisation_per_scale_set_notify_the_action_group() -> None:
    plan = shipped(TRAIN)
    scale_set, group = one(plan, VMSS), one(plan, "azure-native:monitor:ActionGroup")
    alerts = {a.inputs["criteria"]["allOf"][0]["metricName"]: a for a in of_type(plan, ALERT)}
    assert set(alerts) == {"gpu_xid_errors", "gpu_fatal_xid_errors", "gpu_ecc_uncorrectable", "gpu_row_remap_failures",
                           "nodecheck_failed", "gpu_utilization", "dcgm_up"}
    for metric in ("gpu_xid_errors", "gpu_fatal_xid_errors", "gpu_ecc_uncorrectable", "gpu_row_remap_failures",
                   "nodecheck_failed"):
        alert = alerts[metric]
        (criterion,) = alert.inputs["criteria"]["allOf"]
        assert criterion["operator"] == "GreaterThan" and criterion["threshold"] == 0
        assert criterion["metricNamespace"] == "gpufleet" and criterion["skipMetricValidation"] is True
        assert alert.inputs["windowSize"] == "PT1M" and alert.property_dependencies["scopes"] == (scale_set.urn,)
        assert alert.property_dependencies["actions"] == (group.urn,)
    low = alerts["gpu_utilization"].inputs
    assert low["windowSize"] == "PT1H" and low["criteria"]["allOf"][0]["threshold"] == 10


def test_node_identity_may_publish_metrics_of_its_own_scale_set_only() -> None:
    plan = shipped(TRAIN)
    (grant,) = [r for r in of_type(plan, "azure-native:authorization:RoleAssignment") if r.name.endswith("-metrics")]
    assert grant.inputs["roleDefinitionId"].endswith("3913510d-42f4-4e42-8a64-420c390055eb")
    assert grant.property_dependencies["scope"] == (one(plan, VMSS).urn,)


def test_budget_on_the_resource_group_notifies_the_action_group_at_each_percent() -> None:
    plan = shipped(TRAIN)
    budget = one(plan, "azure-native:consumption:Budget")
    group_name = one(plan, "azure-native:resources:ResourceGroup").inputs["resourceGroupName"]
    assert budget.inputs["scope"] == f"/subscriptions/{mocks.SUBSCRIPTION}/resourceGroups/{group_name}"
    assert budget.inputs["amount"] == 1168000  # 1600 USD/h x 730 h
    assert budget.inputs["timeGrain"] == "Monthly" and budget.inputs["timePeriod"]["startDate"][8:] == "01T00:00:00Z"
    assert "timePeriod" in budget.ignore_changes
    notes = budget.inputs["notifications"]
    assert sorted(n["threshold"] for n in notes.values()) == [50, 80, 100]
    group = one(plan, "azure-native:monitor:ActionGroup")
    prefix = f"/subscriptions/{mocks.SUBSCRIPTION}/resourceGroups/{group_name}/providers/Microsoft.Insights/"
    assert all(len(n["contactGroups"]) == 1 and n["contactGroups"][0].startswith(f"{prefix}actionGroups/train-alerts")
               for n in notes.values())
    assert budget.property_dependencies["notifications"] == (group.urn,)


def test_lustre_is_encrypted_with_a_2048_bit_key_of_the_stacks_vault_in_the_cluster_zone() -> None:
    plan = shipped(TRAIN)
    (fs,) = of_type(plan, AMLFS)
    (lustre_key,) = [k for k in of_type(plan, KEY) if "SharedStorage" in k.urn]
    vault = one(plan, "azure-native:keyvault:Vault")
    assert lustre_key.inputs["properties"]["keySize"] == 2048 and lustre_key.property_dependencies["vaultName"] == (
        vault.urn,)
    encryption = fs.inputs["encryptionSettings"]["keyEncryptionKey"]
    assert encryption["keyUrl"].startswith("https://") and "/keys/gpufleet-lustre/" in encryption["keyUrl"]
    assert lustre_key.urn in fs.property_dependencies["encryptionSettings"]
    assert vault.urn in fs.property_dependencies["encryptionSettings"]
    assert fs.inputs["zones"] == ["1"] and fs.inputs["sku"] == {"name": "AMLFS-Durable-Premium-250"}
    assert fs.inputs["storageCapacityTiB"] == 8
    assert fs.inputs["identity"]["type"] == "UserAssigned"


def test_lustre_subnet_admits_lustre_from_the_node_subnet_only() -> None:
    plan = shipped(TRAIN)
    (fs,) = of_type(plan, AMLFS)
    (subnet,) = [s for s in of_type(plan, SUBNET) if s.urn in fs.property_dependencies["filesystemSubnet"]]
    (nsg,) = [n for n in of_type(plan, NSG) if n.urn in subnet.property_dependencies["networkSecurityGroup"]]
    node_subnet = one(plan, SUBNET)
    assert subnet.inputs["addressPrefix"] == "10.42.128.0/27"  # 8 TiB: a /27, in the half the nodes leave free
    allows = {r["sourceAddressPrefix"]: r for r in nsg.inputs["securityRules"] if r["access"] == "Allow"}
    assert set(allows) == {node_subnet.inputs["addressPrefix"], "10.42.128.0/27", "AzureMonitor"}
    from_nodes = allows[node_subnet.inputs["addressPrefix"]]
    # Microsoft's AMLFS network security group table: TCP 988 and 1019-1023 from the clients.
    assert from_nodes["protocol"] == "Tcp" and from_nodes["destinationPortRanges"] == ["988", "1019-1023"]
    assert "destinationPortRange" not in from_nodes
    (deny,) = [r for r in nsg.inputs["securityRules"] if r["access"] == "Deny"]
    assert deny["sourceAddressPrefix"] == "*" and deny["destinationPortRange"] == "*" and deny["priority"] == 4096


def test_bootstrap_mounts_the_file_system_by_its_mgs_address() -> None:
    plan = shipped(TRAIN)
    scale_set, (fs,) = one(plan, VMSS), of_type(plan, AMLFS)
    (mount,) = cloud_init(scale_set)["mounts"]
    assert mount[:3] == [f"{mocks.STAND_IN_MGS_ADDRESS}@tcp:/lustrefs", "/data", "lustre"]
    assert fs.urn in scale_set.property_dependencies["virtualMachineProfile"]


def test_inference_scales_in_to_min_on_the_gpu_utilisation_metric() -> None:
    plan = shipped(INFER)
    scale_set, autoscale = one(plan, VMSS), one(plan, AUTOSCALE)
    (profile,) = autoscale.inputs["profiles"]
    assert profile["capacity"] == {"minimum": "1", "default": "1", "maximum": "8"}
    (rule,) = profile["rules"]
    trigger = rule["metricTrigger"]
    assert (trigger["metricName"], trigger["metricNamespace"]) == ("gpu_utilization", "gpufleet")
    assert trigger["operator"] == "LessThan" and trigger["threshold"] == 5 and trigger["timeWindow"] == "PT60M"
    assert scale_set.urn in autoscale.property_dependencies["profiles"]  # the rule reads the scale set's metric
    assert rule["scaleAction"] == {"direction": "Decrease", "type": "PercentChangeCount", "value": "100",
                                   "cooldown": "PT5M"}


def _errors(cluster: dict) -> list[tuple[str, str]]:
    with pytest.raises(SpecInvalid) as raised:
        resolve_cluster(cluster)
    return [(e.path, e.message) for e in raised.value.errors]


@pytest.mark.parametrize(("shared", "path"), [
    ({"capacity_tib": 12, "throughput_mb_per_tib": 250}, "storage.shared.capacity_tib"),
    ({"capacity_tib": 4, "throughput_mb_per_tib": 250}, "storage.shared.capacity_tib"),
    ({"capacity_tib": 2.4}, "storage.shared.capacity_tib"),
    ({"capacity_tib": 8, "throughput_mb_per_tib": 1000}, "storage.shared.throughput_mb_per_tib"),
])
def test_a_lustre_size_azure_does_not_sell_exits_2_naming_the_field(tmp_path, shared, path) -> None:
    result = plan_cli(tmp_path, variant(storage={"shared": {"kind": "lustre", "mount": "/data", **shared}}))
    assert result.exit_code == 2
    assert path in result.output and "Azure Managed Lustre" in result.output


@pytest.mark.parametrize(("tib", "tier"), [(8, 250), (128, 250), (4, 500), (16, 125), (48, None)])
def test_lustre_sizes_azure_sells_pass(tib, tier) -> None:
    cluster = variant(storage={"shared": {"capacity_tib": tib, "throughput_mb_per_tib": tier}})
    assert resolve_cluster(cluster).spec.storage.shared.capacity_tib == tib


def test_lustre_needs_one_zone_and_a_created_vnet() -> None:
    assert ("network.zones", "Azure Managed Lustre lives in one availability zone: give network.zones the one zone "
            "the nodes and the file system share") in _errors(variant(network={"zones": []}))
    brought = variant(network={"cidr": None, "vnet_id": "/subscriptions/x/v", "subnet_id": "/subscriptions/x/s"})
    assert any(path == "storage.shared" and "network.cidr" in message for path, message in _errors(brought))


def test_alert_windows_and_target_are_azures() -> None:
    low = variant(monitoring={"alarms": {"target": "create", "low_utilisation": {"below_percent": 10,
                                                                              "for_minutes": 120}}})
    assert any(path == "monitoring.alarms.low_utilisation.for_minutes" for path, _ in _errors(low))
    topic = variant(monitoring={"alarms": {"target": "arn:aws:sns:us-east-1:123456789012:ops"}})
    assert any(path == "monitoring.alarms.target" and "action group" in m for path, m in _errors(topic))


def test_idle_window_and_budget_notifications_fit_azure() -> None:
    cluster = variant(INFER, group={"idle": {"gpu_util_below": 5, "for_minutes": 721}})
    assert any(path == "node_groups[0].idle.for_minutes" for path, _ in _errors(cluster))
    cluster = variant(budget={"max_hourly_usd": 1600, "alert_at_percent": [10, 20, 30, 40, 50, 60]})
    assert ("budget.alert_at_percent", "an Azure budget holds at most 5 notifications, got 6") in _errors(cluster)


# The publisher on a node, with stub commands

DMON = """#Entity   DBETO  UCRRW  RRF    NCRCT  GPUTL  FBUSD  POWER   TMPTR
ID
GPU 0     0      0      0      0      90     1000   300.5   60
GPU 1     {dbe}      0      0      0      70     3000   500.25  71
"""


def azure_node(tmp_path, xid: int, dbe: int) -> Node:
    node = Node(tmp_path, config("azure", gpu_metrics=GpuMetrics("gpufleet", SCALE_SET_NAME, "eastus"),
                                 health_port=9180))
    node.stub("dcgmi", f"cat <<'OUT'\n{DMON.format(dbe=dbe)}OUT")
    node.kernel_log(xid_lines(xid))
    node.curl({"oauth2/token": '{"access_token":"tok-1","expires_in":"3599"}', "subscriptionId": "sub-1",
               "resourceGroupName": "rg-1", "monitoring.azure.com": ""})
    (node.root / "run/gpufleet").mkdir(parents=True, exist_ok=True)
    (node.root / "run/gpufleet/healthy").touch()
    return node


def _posts(node: Node) -> dict[str, dict]:
    posts = {}
    for call in node.calls():
        if call.startswith("curl -sf -X POST"):
            url = call.rsplit(" ", 1)[1]
            body = json.loads(call.split(" -d ", 1)[1].rsplit(" ", 1)[0])
            posts[body["data"]["baseData"]["metric"]] = {"url": url, **body["data"]["baseData"]}
    return posts


def test_publisher_posts_each_field_as_a_custom_metric_of_the_scale_set(tmp_path) -> None:
    node = azure_node(tmp_path, xid=13, dbe=0)
    assert node.run("gpufleet-gpu-health", "--once").returncode == 0
    posts = _posts(node)
    url = f"https://eastus.monitoring.azure.com/subscriptions/sub-1/resourceGroups/rg-1/providers/" \
          f"Microsoft.Compute/virtualMachineScaleSets/{SCALE_SET_NAME}/metrics"
    assert {p["url"] for p in posts.values()} == {url}
    values = {name: p["series"][0]["max"] for name, p in posts.items()}
    assert values == {"gpu_xid_errors": 1, "gpu_fatal_xid_errors": 0, "gpu_ecc_uncorrectable": 0,
                      "gpu_row_remap_failures": 0, "gpu_uncorrectable_remapped_rows": 0, "gpu_nvlink_crc_errors": 0,
                      "nodecheck_failed": 0, "dcgm_up": 1, "gpu_utilization": 80, "gpu_memory_used_mib": 4000,
                      "gpu_power_draw_watts": 800, "gpu_temperature_max": 71}
    assert all(p["namespace"] == "gpufleet" and p["dimNames"] == ["Instance"] for p in posts.values())
    assert any("Authorization: Bearer tok-1" in c for c in node.calls())
    assert (node.root / "run/gpufleet/healthy").exists()  # XID 13 is an application error: the node stays


@pytest.mark.parametrize(("xid", "dbe"), [(79, 0), (0, 1)])
def test_publisher_reports_a_broken_node_unhealthy_to_the_scale_set(tmp_path, xid, dbe) -> None:
    node = azure_node(tmp_path, xid=xid, dbe=dbe)
    first = node.run("gpufleet-gpu-health", "--once")
    second = node.run("gpufleet-gpu-health", "--once")
    assert not (node.root / "run/gpufleet/healthy").exists()
    assert (node.root / "run/gpufleet/taken-out").exists()
    assert "reporting unhealthy" in first.stderr and "reporting unhealthy" not in second.stderr
