"""The stack's Consumption budget on its resource group: monthly cost against max_hourly_usd x 730 h, notifying
the action group at each percent of budget.alert_at_percent (action groups are accepted at resource group scope).
The amount is in the billing currency of the subscription (USD assumed, as the catalog's prices)."""

from __future__ import annotations

from datetime import UTC, datetime

import pulumi
from pulumi_azure_native import consumption

from gpufleet.stackfile.monitoring import Budget


def first_of_this_month() -> str:
    """The budget's start: the Consumption API takes the first day of a month, and a past start only within the
    current time grain, so a monthly budget starts on the first of the month it is created in."""
    return datetime.now(UTC).strftime("%Y-%m-01T00:00:00Z")


def cost_budget(
    name: str, environment: str, scope: pulumi.Input[str], budget: Budget, action_group_id: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
) -> consumption.Budget:
    """The budget, named with the environment: a budget's name is unique at its scope, and two environments of one
    cluster may share a brought resource group (a PUT of the same name would take the other's budget over)."""
    amount = budget.monthly_usd
    assert amount is not None  # the spec requires max_hourly_usd with alert_at_percent
    return consumption.Budget(
        f"{name}-budget",
        budget_name=f"gpufleet-{name}-{environment}",
        scope=scope,
        amount=round(amount, 2),
        category="Cost",
        time_grain="Monthly",
        time_period=consumption.BudgetTimePeriodArgs(start_date=first_of_this_month()),
        notifications={
            f"actual-over-{percent}-percent": consumption.NotificationArgs(
                enabled=True,
                operator="GreaterThan",
                threshold=percent,
                threshold_type="Actual",
                contact_groups=[action_group_id],
                contact_emails=[],  # the action group notifies; groups suffice at resource group scope
            )
            for percent in sorted(budget.alert_at_percent)
        },
        # The start date is fixed once the budget exists; a later run must not move it.
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=["timePeriod"])),
    )
