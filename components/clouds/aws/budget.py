"""The stack's AWS Budget: monthly cost of the resources carrying its gpufleet:cluster tag, notifying the
alarm topic at each percent of budget.alert_at_percent. The tag must be an activated cost allocation tag
(Billing console) for AWS Budgets to filter on it."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from gpufleet.stackfile.monitoring import Budget

CLUSTER_TAG = "gpufleet:cluster"


def cost_budget(
    name: str, cluster: str, budget: Budget, topic_arn: pulumi.Input[str], tags: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> aws.budgets.Budget:
    monthly = budget.monthly_usd
    assert monthly is not None  # the spec requires max_hourly_usd with alert_at_percent
    return aws.budgets.Budget(
        f"{name}-budget",
        budget_type="COST",
        time_unit="MONTHLY",
        limit_amount=f"{monthly:.2f}",
        limit_unit="USD",
        # Cost Explorer's tag filter form: user:<key>$<value>.
        cost_filters=[aws.budgets.BudgetCostFilterArgs(name="TagKeyValue", values=[f"user:{CLUSTER_TAG}${cluster}"])],
        notifications=[
            aws.budgets.BudgetNotificationArgs(
                notification_type="ACTUAL",
                comparison_operator="GREATER_THAN",
                threshold=percent,
                threshold_type="PERCENTAGE",
                subscriber_sns_topic_arns=[topic_arn],
            )
            for percent in sorted(budget.alert_at_percent)
        ],
        tags=tags,
        opts=opts,
    )
