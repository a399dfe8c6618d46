"""The rules that cover the classes of Checkov's findings on AWS: VPC flow logs (CKV2_AWS_11), the default security
group closed (CKV2_AWS_12), log retention (CKV_AWS_66 / CKV_AWS_338), Image Builder components on a customer key
(CKV_AWS_180). Each fires on a bad resource and passes a good one; the shipped plans pass them."""

from __future__ import annotations

from aws_rule_args import CMK, validate
from conftest import of_type
from stack_rule_args import messages, res, urn

VPC = "aws:ec2/vpc:Vpc"
FLOW_LOG = "aws:ec2/flowLog:FlowLog"
DEFAULT_SG = "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup"
SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
COMPONENT = "aws:imagebuilder/component:Component"


def vpc() -> object:
    return res(VPC, "net-vpc", {"cidrBlock": "10.42.0.0/16"})


def on_vpc(resource_type: str, name: str, inputs: dict) -> object:
    return res(resource_type, name, {"vpcId": "vpc-1", **inputs}, depends_on=(urn(VPC, "net-vpc"),),
               property_dependencies={"vpcId": (urn(VPC, "net-vpc"),)})


def test_a_vpc_without_a_flow_log_fails() -> None:
    ((at, message),) = messages("aws-vpc-flow-logs", [vpc()])
    assert at == urn(VPC, "net-vpc") and "no flow log" in message and "traffic_type 'ALL'" in message


def test_a_flow_log_of_rejected_traffic_only_fails_and_leaves_the_vpc_unlogged() -> None:
    found = messages("aws-vpc-flow-logs", [vpc(), on_vpc(FLOW_LOG, "fl", {"trafficType": "REJECT"})])
    assert [at for at, _ in found] == [urn(FLOW_LOG, "fl"), urn(VPC, "net-vpc")]
    assert "only REJECT traffic" in found[0][1]


def test_a_vpc_with_a_flow_log_of_all_traffic_passes() -> None:
    assert messages("aws-vpc-flow-logs", [vpc(), on_vpc(FLOW_LOG, "fl", {"trafficType": "ALL"})]) == []


def test_a_vpc_whose_default_group_is_not_managed_fails() -> None:
    ((at, message),) = messages("aws-default-sg-closed", [vpc()])
    assert at == urn(VPC, "net-vpc") and "keeps its default rules" in message


def test_a_default_group_with_rules_fails() -> None:
    rule = {"protocol": "-1", "fromPort": 0, "toPort": 0, "self": True}
    found = messages("aws-default-sg-closed", [vpc(), on_vpc(DEFAULT_SG, "default", {"ingress": [rule]})])
    assert found == [(urn(DEFAULT_SG, "default"),
                      "the VPC's default security group has ingress rules: remove them; the default security group "
                      "is what a resource without one gets: leave it with no rules")]


def test_a_rule_added_to_the_default_group_fails() -> None:
    default = on_vpc(DEFAULT_SG, "default", {})
    added = res(SG_RULE, "open", {"type": "egress", "securityGroupId": "sg-default", "protocol": "-1"},
                depends_on=(urn(DEFAULT_SG, "default"),),
                property_dependencies={"securityGroupId": (urn(DEFAULT_SG, "default"),)})
    ((at, message),) = messages("aws-default-sg-closed", [vpc(), default, added])
    assert at == urn(SG_RULE, "open") and "opens the VPC's default security group" in message


def test_an_emptied_default_group_passes() -> None:
    assert messages("aws-default-sg-closed", [vpc(), on_vpc(DEFAULT_SG, "default", {})]) == []


def test_log_retention_unset_or_under_the_minimum_is_advised() -> None:
    (message,) = validate("aws-log-retention", LOG_GROUP, {"name": "/gpufleet/x"})
    assert "never expire" in message and "monitoring.log_retention_days" in message
    (message,) = validate("aws-log-retention", LOG_GROUP, {"retentionInDays": 14})
    assert "keeps events 14 days, under the minimum of 30" in message
    (message,) = validate("aws-log-retention", LOG_GROUP, {"retentionInDays": 30}, {"minimumDays": 365})
    assert "under the minimum of 365" in message


def test_log_retention_at_the_minimum_passes() -> None:
    assert validate("aws-log-retention", LOG_GROUP, {"retentionInDays": 30}) == []
    assert validate("aws-log-retention", LOG_GROUP, {"retentionInDays": 400}, {"minimumDays": 365}) == []


def test_an_image_component_without_a_customer_key_fails() -> None:
    for props in ({"platform": "Linux"}, {"platform": "Linux", "kmsKeyId": "alias/aws/imagebuilder"}):
        (message,) = validate("aws-image-component-cmk", COMPONENT, props)
        assert "kms_key_id" in message


def test_an_image_component_on_a_customer_key_passes() -> None:
    assert validate("aws-image-component-cmk", COMPONENT, {"platform": "Linux", "kmsKeyId": CMK}) == []


def test_the_shipped_aws_plans_pass_these_rules(shipped_plans) -> None:
    rules = {"aws-vpc-flow-logs", "aws-default-sg-closed", "aws-log-retention", "aws-image-component-cmk"}
    judged = 0
    for name, plan in shipped_plans.items():
        if plan.cloud == "aws":
            assert not [v for v in plan.policies["violations"] if v["policy"] in rules], name
            judged += len(of_type(plan, VPC)) + len(of_type(plan, COMPONENT))
    assert judged >= 3  # two created VPCs and the image stack's component were judged
