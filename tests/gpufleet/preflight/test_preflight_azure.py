"""Azure preflight through the real SDK clients and recorded answers: quotas, sizes offered per zone, providers and
features, and what a credential, throttling or a timeout do. Brought resources and images:
test_preflight_azure_brought.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
from azure.core.exceptions import ServiceResponseTimeoutError
from azure_replay import INFER, SUBSCRIPTION, TRAIN, TestCredential, account, cluster, fixture, only, run, usages_with
from conftest import read_cluster

from gpufleet.preflight.azure.clients import RETRIES, default_subscription
from gpufleet.preflight.findings import PreflightUnavailable

USAGES = f"GET /subscriptions/{SUBSCRIPTION}/providers/Microsoft.Compute/locations/eastus/usages"
FEATURE = "features/EncryptionAtHost"


def test_a_clean_account_has_no_findings_and_every_call_reads() -> None:
    stack = cluster()
    replay = account(stack)
    assert run(stack, replay) == []
    asked = " ".join(replay.asked)
    # The providers the training stack's resources need, the feature its scale sets set, the two region lists.
    for namespace in ("Microsoft.Compute", "Microsoft.StorageCache", "Microsoft.Consumption", "Microsoft.Insights"):
        assert f"/providers/{namespace} " in asked + " "
    assert FEATURE in asked and "/providers/Microsoft.Compute/skus" in asked and "/eastus/usages" in asked
    assert len(replay.asked) == len(set(replay.asked)), "each list is fetched once for every check"


def test_family_quota_short_of_size_max_names_the_numbers() -> None:
    stack = cluster()
    finding = only(run(stack, account(stack, usages="usages-eastus-low-gpu-quota")), "azure-quota")
    assert finding.field == "node_groups[0].size.max" and finding.blocking
    assert "standardNDSH100v5Family" in finding.says and "limit 384, 96 in use, 288 free" in finding.says
    assert "needs 1,536" in finding.says and "16 x Standard_ND96isr_H100_v5 at 96 vCPUs" in finding.says
    assert "at least 1,632 vCPUs" in finding.fix and "lower size.max" in finding.fix


def test_regional_total_counts_too() -> None:
    stack = cluster()
    finding = only(run(stack, account(stack, usages=usages_with({"cores": (16, 1000)}))), "azure-quota")
    assert "Total Regional vCPUs (cores)" in finding.says and "984 free" in finding.says
    assert "at least 1,552 vCPUs" in finding.fix


def test_a_family_the_usages_do_not_list_has_no_quota() -> None:
    stack = cluster()
    finding = only(run(stack, account(stack, usages=usages_with({"standardNDSH100v5Family": None}))), "azure-quota")
    assert "list no standardNDSH100v5Family quota" in finding.says and finding.blocking


def test_spot_groups_count_against_the_low_priority_quota_only() -> None:
    stack = cluster(INFER)  # 8 x NC24ads_A100_v4 Spot: 192 vCPUs, over the family's 96 but not counted there
    assert run(stack, account(stack)) == []
    finding = only(run(stack, account(stack, usages="usages-eastus-low-gpu-quota")), "azure-quota")
    assert "lowPriorityCores" in finding.says and "limit 10" in finding.says and "needs 192" in finding.says
    assert finding.field == "node_groups[0].size.max"


def test_a_zone_restricted_for_the_subscription_is_refused_for_the_infiniband_group() -> None:
    stack = cluster()
    finding = only(run(stack, account(stack, skus="skus-eastus-h100-zone1-restricted")), "azure-zone-offering")
    assert finding.field == "network.zones" and finding.blocking
    assert "offered in zones 2, 3 of eastus" in finding.says and "not zone 1 (restricted" in finding.says
    assert "one of zones 2, 3" in finding.fix and "InfiniBand group needs one zone" in finding.fix


def test_a_group_pinned_to_a_zone_names_its_own_zone_field() -> None:
    stack = cluster(INFER, group={"zone": "1"}, network={"cidr": "10.43.0.0/16", "zones": ["1"]})
    replay = account(stack, skus="skus-eastus")
    recorded = fixture("skus-eastus")
    for sku in recorded["body"]["value"]:
        if sku["name"] == "Standard_NC24ads_A100_v4":
            sku["locationInfo"][0]["zones"] = ["2", "3"]
    replay.add(recorded)
    assert only(run(stack, replay), "azure-zone-offering").field == "node_groups[0].zone"


def test_a_size_restricted_in_the_region_is_refused_and_not_counted() -> None:
    stack = cluster()
    replay = account(stack, skus="skus-eastus-h100-region-restricted", usages="usages-eastus-low-gpu-quota")
    findings = run(stack, replay)
    finding = only(findings, "azure-offering")
    assert finding.field == "node_groups[0].instance_types[0]"
    assert "restricted in eastus" in finding.says and "NotAvailableForSubscription" in finding.says
    assert not [f for f in findings if f.check == "azure-quota"]


def test_a_size_the_region_does_not_list_is_refused() -> None:
    stack = cluster()
    recorded = fixture("skus-eastus")
    recorded["body"]["value"] = [s for s in recorded["body"]["value"] if s["name"] != "Standard_ND96isr_H100_v5"]
    replay = account(stack)
    replay.add(recorded)
    finding = only(run(stack, replay), "azure-offering")
    assert "lists no VM size Standard_ND96isr_H100_v5 in eastus" in finding.says


def test_size_capabilities_encryption_at_host_and_spot() -> None:
    stack = cluster(group={"capacity": "spot"})
    findings = run(stack, account(stack, skus="skus-eastus-no-encryption-at-host"))
    fields = {f.field: f for f in findings if f.check == "azure-offering"}
    assert "EncryptionAtHostSupported False" in fields["storage.encryption_at_host"].says
    assert "LowPriorityCapable" in fields["node_groups[0].capacity"].says


def test_an_unregistered_provider_names_the_field_that_needs_it() -> None:
    stack = cluster()
    findings = run(stack, account(stack, Microsoft_StorageCache="provider-notregistered"))
    finding = only(findings, "azure-provider")
    assert finding.field == "storage.shared" and finding.blocking
    assert "Microsoft.StorageCache is NotRegistered" in finding.says
    assert finding.fix == "az provider register --namespace Microsoft.StorageCache --wait"


def test_a_provider_still_registering_is_advisory() -> None:
    stack = cluster()
    finding = only(run(stack, account(stack, Microsoft_Consumption="provider-registering")), "azure-provider")
    assert not finding.blocking and finding.field == "budget.alert_at_percent"


def test_encryption_at_host_needs_the_feature_and_only_then_is_it_asked() -> None:
    stack = cluster()
    finding = only(run(stack, account(stack, feature="feature-encryptionathost-notregistered")), "azure-feature")
    assert finding.field == "storage.encryption_at_host" and "NotRegistered" in finding.says
    assert finding.fix.startswith("az feature register --namespace Microsoft.Compute --name EncryptionAtHost")
    without = cluster(storage={**read_cluster(TRAIN)["storage"], "encryption_at_host": False})
    replay = account(without, feature="feature-encryptionathost-notregistered")
    assert run(without, replay) == [] and not any(FEATURE in asked for asked in replay.asked)


def test_an_expired_credential_stops_preflight_naming_its_source() -> None:
    stack = cluster()
    expired = TestCredential("AADSTS700082: The refresh token has expired due to inactivity.")
    with pytest.raises(PreflightUnavailable) as raised:
        run(stack, account(stack), expired)
    assert "AADSTS700082" in str(raised.value) and "the test credential" in str(raised.value)
    assert "az login" in str(raised.value)


def test_an_expired_token_refused_by_resource_manager_stops_preflight() -> None:
    stack = cluster()
    replay = account(stack).answer(USAGES, fixture("error-token-expired", path=USAGES.split(" ")[1]))
    with pytest.raises(PreflightUnavailable, match="refused the credential.*az login"):
        run(stack, replay)


def test_throttling_is_retried_after_retry_after_then_passes() -> None:
    stack = cluster()
    replay = account(stack).answer(USAGES, fixture("error-throttled", path=USAGES), fixture("usages-eastus"))
    assert run(stack, replay) == []
    assert replay.asked.count(USAGES) == 2 and replay.slept == [17.0]  # the Retry-After header's seconds


def test_throttling_that_lasts_stops_preflight_after_the_retries() -> None:
    stack = cluster()
    replay = account(stack).answer(USAGES, fixture("error-throttled", path=USAGES))
    with pytest.raises(PreflightUnavailable, match="throttled the compute quotas of eastus"):
        run(stack, replay)
    assert replay.asked.count(USAGES) == RETRIES + 1


def test_a_timeout_is_retried_then_stops_preflight() -> None:
    stack = cluster()
    replay = account(stack).answer(USAGES, ServiceResponseTimeoutError("Read timed out. (read timeout=30)"))
    with pytest.raises(PreflightUnavailable, match="no answer from Azure Resource Manager reading the compute quotas"):
        run(stack, replay)
    assert replay.asked.count(USAGES) == RETRIES + 1


def test_access_denied_names_the_role_to_grant() -> None:
    stack = cluster()
    replay = account(stack).answer(USAGES, fixture("error-forbidden", path=USAGES))
    with pytest.raises(PreflightUnavailable, match="AuthorizationFailed.*Reader on the subscription"):
        run(stack, replay)


def test_an_unregistered_namespace_is_never_registered_by_the_sdk() -> None:
    # azure-mgmt-core's auto-registration would POST .../providers/Microsoft.Compute/register here: the replay
    # refuses anything but GET, so only reads happened.
    stack = cluster()
    replay = account(stack).answer(USAGES, fixture("error-missing-registration", path=USAGES))
    with pytest.raises(PreflightUnavailable, match="MissingSubscriptionRegistration"):
        run(stack, replay)
    assert all(asked.startswith("GET ") for asked in replay.asked)
    assert not any(asked.endswith("/register") for asked in replay.asked)


def test_the_subscription_comes_from_the_environment_or_the_cli_profile(tmp_path: Any) -> None:
    assert default_subscription({"AZURE_SUBSCRIPTION_ID": SUBSCRIPTION}) == SUBSCRIPTION
    assert default_subscription({"ARM_SUBSCRIPTION_ID": SUBSCRIPTION}) == SUBSCRIPTION
    profile = json.dumps({"subscriptions": [{"id": "other", "isDefault": False},
                                            {"id": SUBSCRIPTION, "isDefault": True}]})
    (tmp_path / "azureProfile.json").write_text(profile, encoding="utf-8-sig")  # the Azure CLI writes a BOM
    assert default_subscription({"AZURE_CONFIG_DIR": str(tmp_path)}) == SUBSCRIPTION
    with pytest.raises(PreflightUnavailable, match="AZURE_SUBSCRIPTION_ID"):
        default_subscription({"AZURE_CONFIG_DIR": str(tmp_path / "none")})


def slurm(head_type: str) -> Any:
    return cluster(scheduler={"kind": "slurm", "head_node": {"instance_type": head_type}})


def test_the_slurm_head_nodes_size_is_checked_like_a_groups() -> None:
    stack = slurm("Standard_D8s_v5")
    assert run(stack, account(stack)) == []
    stack = slurm("Standard_D4ds_v5")  # a size the recorded list does not hold
    finding = only(run(stack, account(stack)), "azure-offering")
    assert finding.field == "scheduler.head_node.instance_type"
    assert finding.says.startswith("Azure lists no VM size Standard_D4ds_v5 in eastus")


def test_a_head_node_zone_without_its_size_is_refused() -> None:
    stack = slurm("Standard_D8s_v5")
    recorded = fixture("skus-eastus")
    for sku in recorded["body"]["value"]:
        if sku["name"] == "Standard_D8s_v5":
            sku["locationInfo"][0]["zones"] = ["2", "3"]
    replay = account(stack)
    replay.add(recorded)
    finding = only(run(stack, replay), "azure-zone-offering")
    assert (finding.field, finding.says) == ("network.zones", "Standard_D8s_v5 is offered in zones 2, 3 of eastus "
                                                              "for this subscription, not zone 1")


def test_the_head_node_counts_against_its_family_quota() -> None:
    stack = slurm("Standard_D8s_v5")
    findings = run(stack, account(stack, usages=usages_with({"standardDSv5Family": (0, 4)})))
    finding = only(findings, "azure-quota")
    assert finding.field == "scheduler.head_node.instance_type"
    assert "the Slurm head node: 1 x Standard_D8s_v5 at 8 vCPUs" in finding.says
