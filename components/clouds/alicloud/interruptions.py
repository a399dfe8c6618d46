"""Spot interruption events (CloudMonitor system event Instance:PreemptibleInstanceInterruption) delivered to an
encrypted Simple Log Service logstore.

The logstore uses SLS's own encryption (encrypt_type default, AES): encrypting it with the cluster's KMS key
(BYOK) needs a RAM role that SLS assumes to reach the key, which gpufleet does not create.
"""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from ..naming import fit
from .names import NAMES, PROJECT

INTERRUPTION_EVENT = "Instance:PreemptibleInstanceInterruption"


def interruption_rule(
    name: str,
    region: str,
    account_id: pulumi.Input[str],
    retention_days: int,
    tags: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> alicloud.cms.EventRule:
    """The event rule and the logstore that keeps its events `retention_days` (monitoring.log_retention_days)."""
    project = alicloud.log.Project(
        f"{name}-events",
        # Unique in the region over every account: the hash of region and account keeps it this stack's.
        project_name=pulumi.Output.from_input(account_id).apply(
            lambda account: fit(f"{name}-events", NAMES.limit(PROJECT, "projectName"), region, account)
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
        rule_name=fit(f"{name}-interruptions", None, region),  # account-wide: PutEventRule overwrites by name
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
        status="ENABLED",
        opts=opts,
    )
