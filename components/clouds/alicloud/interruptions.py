"""Spot interruption events (CloudMonitor system event Instance:PreemptibleInstanceInterruption) delivered to an
encrypted Simple Log Service logstore, the audit trail of which node was reclaimed when, and, where the stack has
alarms, to their contact group (PutEventRuleTargets ContactParameters), so a person learns of each reclaim. A stack
without alarms keeps the logstore only: nothing reads it but a person querying it.

The logstore uses SLS's own encryption (encrypt_type default, AES): encrypting it with the cluster's KMS key
(BYOK) needs a RAM role that SLS assumes to reach the key, which gpufleet does not create.
"""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from gpufleet.clouds.alicloud.names import NAMES, PROJECT
from gpufleet.clouds.naming import fit

INTERRUPTION_EVENT = "Instance:PreemptibleInstanceInterruption"


def interruption_rule(
    name: str,
    base: str,
    region: str,
    account_id: pulumi.Input[str],
    retention_days: int,
    contact_group: pulumi.Input[str] | None,
    tags: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> alicloud.cms.EventRule:
    """The event rule, the logstore that keeps its events `retention_days` (monitoring.log_retention_days) and the
    contact group (a name) it notifies, if any. The rule's and project's names come from `base`, the cluster in its
    environment (the rule is account-wide, the project unique in the region over every account)."""
    project = alicloud.log.Project(
        f"{name}-events",
        # Unique in the region over every account: the hash of region and account keeps it this stack's.
        project_name=pulumi.Output.from_input(account_id).apply(
            lambda account: fit(f"{base}-events", NAMES.limit(PROJECT, "projectName"), region, account)
        ), description="gpufleet spot interruption events",
        tags=tags, opts=opts,
    )
    store = alicloud.log.Store(
        f"{name}-interruptions",
        project_name=project.project_name,
        logstore_name="interruptions",
        retention_period=retention_days,
        encrypt_conf=alicloud.log.StoreEncryptConfArgs(enable=True, encrypt_type="default"),
        opts=opts,
    )
    return alicloud.cms.EventRule(
        f"{name}-interruptions",
        rule_name=fit(f"{base}-interruptions", None, region),  # account-wide: PutEventRule overwrites by name
        description="Spot (preemptible) instance interruption notices, 5 minutes before release",
        event_pattern=alicloud.cms.EventRuleEventPatternArgs(
            product="ECS", event_type_lists=["StatusNotification"], name_lists=[INTERRUPTION_EVENT]
        ),
        sls_parameters=[
            alicloud.cms.EventRuleSlsParameterArgs(
                sls_parameters_id="1",
                project=project.project_name,
                log_store=store.logstore_name,
                region=region,
                arn=pulumi.Output.all(account_id, project.project_name, store.logstore_name).apply(
                    lambda v: f"acs:log:{region}:{v[0]}:project/{v[1]}/logstore/{v[2]}"
                ),
            )
        ],
        # The notification level is left to CloudMonitor's default (which channels it picks is to confirm on an
        # account: the API reference lists Level values only by example).
        contact_parameters=[
            alicloud.cms.EventRuleContactParameterArgs(contact_parameters_id="2", contact_group_name=contact_group)
        ] if contact_group is not None else None,
        status="ENABLED",
        opts=opts,
    )
