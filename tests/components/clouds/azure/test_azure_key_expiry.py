"""The Lustre key's near-expiry event reaches people: the vault's Event Grid system topic routes KeyNearExpiry for
that key to the stack's action group as an Azure Monitor alert (Cloud Events schema, as that destination takes);
a stack with no action group is told in its plan that nobody hears it."""

from __future__ import annotations

from pathlib import Path

from azure_plans import TRAIN, one, plan_variant, shipped, variant
from conftest import of_type
from conftest import one as only

from components.clouds.azure.shared_storage import NOTIFY_BEFORE_EXPIRY

TOPIC = "azure-native:eventgrid:SystemTopic"
SUBSCRIPTION = "azure-native:eventgrid:SystemTopicEventSubscription"
VAULT = "azure-native:keyvault:Vault"
KEY = "azure-native:keyvault:Key"
ACTION_GROUP = "azure-native:monitor:ActionGroup"


def test_the_lustre_keys_near_expiry_alerts_the_action_group() -> None:
    plan = shipped(TRAIN)
    vault, group = one(plan, VAULT), one(plan, ACTION_GROUP)
    (key,) = [k for k in of_type(plan, KEY) if k.inputs["keyName"] == "gpufleet-lustre"]
    actions = key.inputs["properties"]["rotationPolicy"]["lifetimeActions"]
    assert {"trigger": {"timeBeforeExpiry": NOTIFY_BEFORE_EXPIRY}, "action": {"type": "notify"}} in actions
    topic, subscription = only(plan, TOPIC), only(plan, SUBSCRIPTION)  # inside the shared storage component
    assert topic.inputs["topicType"] == "Microsoft.KeyVault.vaults"
    assert topic.property_dependencies["source"] == (vault.urn,)
    assert subscription.property_dependencies["systemTopicName"] == (topic.urn,)
    assert key.urn in subscription.depends_on
    assert subscription.inputs["eventDeliverySchema"] == "CloudEventSchemaV1_0"
    assert subscription.inputs["filter"] == {
        "includedEventTypes": ["Microsoft.KeyVault.KeyNearExpiry"],
        "subjectBeginsWith": "gpufleet-lustre", "subjectEndsWith": "gpufleet-lustre", "isSubjectCaseSensitive": False}
    destination = subscription.inputs["destination"]
    assert destination["endpointType"] == "MonitorAlert" and destination["severity"] == "Sev2"
    assert subscription.property_dependencies["destination"] == (group.urn,)
    assert "warnings" not in plan.summary


def test_without_an_action_group_the_plan_says_nobody_hears_it(tmp_path: Path) -> None:
    cluster = variant(TRAIN, budget={"alert_at_percent": []}, monitoring={"alarms": None})
    plan = plan_variant(tmp_path, cluster)
    assert not of_type(plan, TOPIC) and not of_type(plan, SUBSCRIPTION)
    (warning,) = [w for w in plan.summary.get("warnings", []) if w.startswith("storage.shared:")]
    assert "nobody is told when the file system's key version nears expiry" in warning
