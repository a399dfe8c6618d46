"""Outputs the AWS program feeds into other inputs arrive in the shapes AWS returns (offline engine answers)."""

from __future__ import annotations

import json
import re

from gpufleet.plan.record import RecordedResource

ACCOUNT = "123456789012"


def one(resources: list[RecordedResource], typ: str, name: str | None = None) -> RecordedResource:
    (found,) = [r for r in resources if r.type == typ and (name is None or r.name == name)]
    return found


def fed(resource: RecordedResource, key: str, source: RecordedResource) -> object:
    """The input `key`, after checking that it came from `source`."""
    assert source.urn in resource.property_dependencies[key], (resource.name, key)
    return resource.inputs[key]


def test_nat_gateway_gets_the_eips_allocation_id(shipped_plans) -> None:
    for plan in shipped_plans.values():
        for nat in (r for r in plan.resources if r.type == "aws:ec2/natGateway:NatGateway"):
            eip = one(plan.resources, "aws:ec2/eip:Eip", nat.name)
            assert re.fullmatch(r"eipalloc-[0-9a-f]{17}", fed(nat, "allocationId", eip))


def test_node_policy_names_the_log_group_by_its_arn(shipped_plans) -> None:
    plan = shipped_plans["aws-train-p5"]
    group = one(plan.resources, "aws:cloudwatch/logGroup:LogGroup")
    policy = json.loads(fed(one(plan.resources, "aws:iam/rolePolicy:RolePolicy", "train-node-node"), "policy", group))
    arn = f"arn:aws:logs:us-east-1:{ACCOUNT}:log-group:{group.inputs['name']}"
    (statement,) = [s for s in policy["Statement"] if s["Sid"] == "WriteOwnLogGroup"]
    assert statement["Resource"] == [arn, f"{arn}:log-stream:*"]


def test_topic_policy_names_the_topic_and_its_event_rule(shipped_plans) -> None:
    resources = shipped_plans["aws-train-p5"].resources
    topic = one(resources, "aws:sns/topic:Topic", "train-interruptions")
    rule = one(resources, "aws:cloudwatch/eventRule:EventRule")
    topic_policy = one(resources, "aws:sns/topicPolicy:TopicPolicy", "train-interruptions")
    (statement,) = json.loads(fed(topic_policy, "policy", rule))["Statement"]
    topic_arn = fed(topic_policy, "arn", topic)
    assert re.fullmatch(rf"arn:aws:sns:us-east-1:{ACCOUNT}:train-interruptions-[0-9a-f]{{7}}", topic_arn)
    assert statement["Resource"] == topic_arn
    rule_arn = statement["Condition"]["ArnEquals"]["aws:SourceArn"]
    target = one(resources, "aws:cloudwatch/eventTarget:EventTarget")
    # The rule's ARN and the name the target uses are one rule: arn:aws:events:R:A:rule/NAME.
    assert rule_arn == f"arn:aws:events:us-east-1:{ACCOUNT}:rule/{fed(target, 'rule', rule)}"


def test_cluster_key_and_instance_profile_arns(shipped_plans) -> None:
    resources = shipped_plans["aws-train-p5"].resources
    key = one(resources, "aws:kms/key:Key")
    template = one(resources, "aws:ec2/launchTemplate:LaunchTemplate")
    ebs = fed(template, "blockDeviceMappings", key)[0]["ebs"]
    uuid4 = "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
    assert re.fullmatch(rf"arn:aws:kms:us-east-1:{ACCOUNT}:key/{uuid4}", ebs["kmsKeyId"])
    alias = one(resources, "aws:kms/alias:Alias")
    assert fed(alias, "targetKeyId", key) == ebs["kmsKeyId"].rsplit("/", 1)[1]
    profile = one(resources, "aws:iam/instanceProfile:InstanceProfile")
    arn = fed(template, "iamInstanceProfile", profile)["arn"]
    assert re.fullmatch(rf"arn:aws:iam::{ACCOUNT}:instance-profile/train-node-profile-[0-9a-f]{{7}}", arn)
    role = one(resources, "aws:iam/role:Role", "train-node-role")
    assert re.fullmatch(r"train-node-role-[0-9a-f]{7}", fed(profile, "role", role))


def test_image_stack_keys_and_image_builder_arns(shipped_plans) -> None:
    resources = shipped_plans["aws-images"].resources
    key = one(resources, "aws:kms/key:Key")
    assert key.inputs["multiRegion"] is True
    distribution = one(resources, "aws:imagebuilder/distributionConfiguration:DistributionConfiguration")
    key_ids = set()
    for entry in fed(distribution, "distributions", key):
        region, key_id = re.fullmatch(rf"arn:aws:kms:([a-z0-9-]+):{ACCOUNT}:key/(mrk-[0-9a-f]{{32}})",
                                      entry["amiDistributionConfiguration"]["kmsKeyId"]).groups()
        assert region == entry["region"]  # a replica lives in its own region, under the primary's id
        key_ids.add(key_id)
    assert len(key_ids) == 1
    pipeline = one(resources, "aws:imagebuilder/imagePipeline:ImagePipeline")
    recipe = one(resources, "aws:imagebuilder/imageRecipe:ImageRecipe")
    prefix = f"arn:aws:imagebuilder:us-east-1:{ACCOUNT}"
    assert re.fullmatch(rf"{prefix}:image-recipe/images-recipe-[0-9a-f]{{7}}/{re.escape(recipe.inputs['version'])}",
                        fed(pipeline, "imageRecipeArn", recipe))
    components = [r for r in resources if r.type == "aws:imagebuilder/component:Component"]
    entries = recipe.inputs["components"]
    assert components and len(entries) == len(components)  # the installer's parts, one component each
    arns = [entry["componentArn"] for entry in entries]
    for component in components:
        assert component.urn in recipe.property_dependencies["components"]
        version = re.escape(component.inputs["version"])
        assert [a for a in arns if re.fullmatch(rf"{prefix}:component/{component.name}-[0-9a-f]{{7}}/{version}/1", a)]


def test_no_fed_input_is_left_empty(shipped_plans) -> None:
    """An output the engine has no answer for would arrive as null: every fed input has a value."""

    def nulls(value: object) -> bool:
        if isinstance(value, dict):
            return any(nulls(v) for v in value.values())
        if isinstance(value, list):
            return any(nulls(v) for v in value)
        return value is None

    for stack, plan in shipped_plans.items():
        for resource in plan.resources:
            for key in resource.property_dependencies:
                assert not nulls(resource.inputs.get(key)), (stack, resource.name, key)
