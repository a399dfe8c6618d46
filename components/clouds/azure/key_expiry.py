"""Who hears that the Lustre key nears expiry: Key Vault publishes Microsoft.KeyVault.KeyNearExpiry to Event Grid
(the key's rotation policy `notify` action, 30 days ahead), and only a subscription delivers it anywhere. The vault's
system topic routes that one event, for that one key, to the stack's action group as an Azure Monitor alert (Event
Grid's Monitor Alert destination: Key Vault system events only, Cloud Events v1.0 schema only; azure-docs
articles/event-grid/handler-azure-monitor-alerts.md and handle-key-vault-events-using-azure-monitor-alerts.md). The
event's subject is the key's name (articles/event-grid/event-schema-key-vault.md: "Name of the object that is the
target of the event")."""

from __future__ import annotations

import pulumi
from pulumi_azure_native import eventgrid

KEY_NEAR_EXPIRY = "Microsoft.KeyVault.KeyNearExpiry"
VAULT_TOPIC_TYPE = "Microsoft.KeyVault.vaults"  # the system topic type of a Key Vault source
# The file system stops reading its data when its key version expires: a warning, answered within the 30 days.
SEVERITY = "Sev2"


def notify_key_near_expiry(
    name: str, vault_id: pulumi.Input[str], key_name: str, action_group_id: pulumi.Input[str],
    resource_group_name: pulumi.Input[str], location: str, tags: dict[str, str], opts: pulumi.ResourceOptions,
) -> eventgrid.SystemTopicEventSubscription:
    """The vault's system topic and the subscription that alerts the action group when `key_name` nears expiry."""
    topic = eventgrid.SystemTopic(
        f"{name}-key-events",
        resource_group_name=resource_group_name,
        location=location,
        source=vault_id,
        topic_type=VAULT_TOPIC_TYPE,
        tags=tags,
        opts=opts,
    )
    return eventgrid.SystemTopicEventSubscription(
        f"{name}-key-near-expiry",
        resource_group_name=resource_group_name,
        system_topic_name=topic.name,
        event_delivery_schema="CloudEventSchemaV1_0",
        filter=eventgrid.EventSubscriptionFilterArgs(
            included_event_types=[KEY_NEAR_EXPIRY],
            subject_begins_with=key_name,
            subject_ends_with=key_name,
        ),
        destination=eventgrid.MonitorAlertEventSubscriptionDestinationArgs(
            endpoint_type="MonitorAlert",
            action_groups=[action_group_id],
            severity=SEVERITY,
            description=f"Key {key_name} of the shared file system expires within 30 days: move the file system to "
                        "the current key version (`pulumi refresh` then `pulumi up`) before it does",
        ),
        opts=opts,
    )
