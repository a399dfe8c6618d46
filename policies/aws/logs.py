"""AWS logging rules: every VPC the stack creates records its traffic in a flow log, and log groups keep their
events for a known time, at least the organisation's minimum.

Every check skips values it cannot see (unknown during preview) and fails only on known-bad values.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..meta import ADVISORY, MANDATORY, Config, Finding, Props, Rule, Stack, config_schema, resource_rule, stack_rule
from ..props import UNKNOWN, as_int, get
from .resource_types import FLOW_LOG, LOG_GROUP, VPC

DEFAULT_MINIMUM_RETENTION_DAYS = 30  # what gpufleet creates unless monitoring.log_retention_days says otherwise


def check_vpc_flow_logs(stack: Stack, config: Config) -> Iterator[Finding]:
    logged: set[str] = set()
    for flow_log in stack.of_type(FLOW_LOG):
        traffic = get(flow_log.props, "trafficType")
        if traffic is not UNKNOWN and traffic != "ALL":
            yield flow_log.urn, (
                f"the flow log records only {traffic} traffic: set traffic_type = 'ALL' so accepted and rejected "
                "connections are both kept"
            )
            continue
        logged.update(vpc.urn for vpc in stack.dependencies_of(flow_log, VPC, prop="vpcId"))
    for vpc in stack.of_type(VPC):
        if vpc.urn not in logged:
            yield vpc.urn, (
                "the VPC has no flow log: add an aws.ec2.FlowLog with vpc_id this VPC and traffic_type 'ALL' "
                "(gpufleet creates one into the cluster's log group for every VPC it creates)"
            )


def check_log_retention(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    days = get(props, "retentionInDays")
    if days is UNKNOWN:
        return
    minimum = as_int(config.get("minimumDays")) or DEFAULT_MINIMUM_RETENTION_DAYS
    value = as_int(days)
    if not value:  # unset or 0: CloudWatch keeps the events forever
        yield (
            "retention_in_days is not set, so the events never expire: set monitoring.log_retention_days "
            f"(at least {minimum})"
        )
    elif value < minimum:
        yield (
            f"the log group keeps events {value} days, under the minimum of {minimum}: raise "
            "monitoring.log_retention_days"
        )


RULES: list[Rule] = [
    stack_rule(
        "aws-vpc-flow-logs",
        "Every VPC the stack creates has a flow log of all traffic.",
        MANDATORY,
        "aws",
        [VPC, FLOW_LOG],
        check_vpc_flow_logs,
        cis="3.7 (v3.0.0)",
        checkov=("CKV2_AWS_11",),
    ),
    resource_rule(
        "aws-log-retention",
        "CloudWatch log groups expire their events after a set time, at least the configured minimum.",
        ADVISORY,
        "aws",
        [LOG_GROUP],
        check_log_retention,
        checkov=("CKV_AWS_66", "CKV_AWS_338"),
        schema=config_schema(
            {
                "minimumDays": {
                    "type": "integer",
                    "minimum": 1,
                    "default": DEFAULT_MINIMUM_RETENTION_DAYS,
                    "description": "the shortest retention a log group may keep (Checkov CKV_AWS_338 asks 365)",
                }
            }
        ),
    ),
]
