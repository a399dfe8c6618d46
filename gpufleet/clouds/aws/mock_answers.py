"""What the offline engine answers in place of AWS: ids, ARNs and invokes in the shapes AWS returns.

Every computed output the program feeds into another input has the provider's shape (an `eipalloc-`
allocation id, `arn:aws:logs:R:A:log-group:NAME`, a multi-Region key's `mrk-` id...). Values are
derived from the resource's type and name, so two plans of one stack are identical. A resource type
with no entry here gets an opaque id and no computed outputs: give it an answer before the program
feeds one of its outputs anywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..mock_ids import Outputs, answer_from, digest, guid

ACCOUNT = "123456789012"  # the offline engine's stand-in AWS account

# EC2 types: (prefix of the id, resource kind in the ARN).
EC2_IDS = {
    "aws:ec2/vpc:Vpc": ("vpc-", "vpc"),
    "aws:ec2/subnet:Subnet": ("subnet-", "subnet"),
    "aws:ec2/securityGroup:SecurityGroup": ("sg-", "security-group"),
    "aws:ec2/launchTemplate:LaunchTemplate": ("lt-", "launch-template"),
    "aws:ec2/natGateway:NatGateway": ("nat-", "natgateway"),
    "aws:ec2/eip:Eip": ("eipalloc-", "elastic-ip"),
    "aws:ec2/internetGateway:InternetGateway": ("igw-", "internet-gateway"),
    "aws:ec2/routeTable:RouteTable": ("rtb-", "route-table"),
    "aws:ec2/routeTableAssociation:RouteTableAssociation": ("rtbassoc-", None),
    "aws:ec2/vpcEndpoint:VpcEndpoint": ("vpce-", "vpc-endpoint"),
    "aws:ebs/volume:Volume": ("vol-", "volume"),
}

# IAM types: (kind in the ARN, prefix of the unique id).
IAM_KINDS = {
    "aws:iam/role:Role": ("role", "AROA"),
    "aws:iam/instanceProfile:InstanceProfile": ("instance-profile", "AIPA"),
    "aws:iam/policy:Policy": ("policy", "ANPA"),
}

# Image Builder types: kind in the ARN. Components and recipes are versioned; a component ARN also
# carries its build number (Image Builder user guide, "Semantic versioning").
IMAGE_BUILDER_KINDS = {
    "aws:imagebuilder/component:Component": "component",
    "aws:imagebuilder/imageRecipe:ImageRecipe": "image-recipe",
    "aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration": "infrastructure-configuration",
    "aws:imagebuilder/distributionConfiguration:DistributionConfiguration": "distribution-configuration",
    "aws:imagebuilder/imagePipeline:ImagePipeline": "image-pipeline",
}

# Names AWS gives service-linked roles (IAM user guide, "AWS services that work with IAM").
SERVICE_LINKED_ROLE_NAMES = {
    "autoscaling.amazonaws.com": "AWSServiceRoleForAutoScaling",
    "ec2fleet.amazonaws.com": "AWSServiceRoleForEC2Fleet",
    "spot.amazonaws.com": "AWSServiceRoleForEC2Spot",
    "imagebuilder.amazonaws.com": "AWSServiceRoleForImageBuilder",
}


def _arn(service: str, region: str, resource: str) -> str:
    return f"arn:aws:{service}:{region}:{ACCOUNT}:{resource}"


def _name(name: str, inputs: dict[str, Any], seed: str) -> str:
    """The name input, or the one Pulumi's autonaming would give: the logical name and a random suffix."""
    return inputs.get("name") or f"{name}-{digest(seed, 7)}"


def _ec2(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    prefix, kind = EC2_IDS[typ]
    physical = prefix + digest(seed, 17)
    outputs: dict[str, Any] = {"arn": _arn("ec2", region, f"{kind}/{physical}")} if kind else {}
    if typ == "aws:ec2/eip:Eip":
        outputs["allocationId"] = physical
    if typ == "aws:ec2/launchTemplate:LaunchTemplate":
        outputs.update(latestVersion=1, defaultVersion=1)
    return physical, outputs


def _placement_group(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    group = _name(name, inputs, seed)
    return group, {"name": group, "placementGroupId": "pg-" + digest(seed, 17),
                   "arn": _arn("ec2", region, f"placement-group/{group}")}


def _fleet(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    fleet = f"fleet-{guid(seed)}"
    return fleet, {"arn": _arn("ec2", region, f"fleet/{fleet}")}


def _autoscaling_group(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    group = _name(name, inputs, seed)
    return group, {"name": group, "arn": _arn(
        "autoscaling", region, f"autoScalingGroup:{guid(seed)}:autoScalingGroupName/{group}")}


def _kms_key(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    key_id = f"mrk-{digest(seed, 32)}" if inputs.get("multiRegion") else guid(seed)
    return key_id, {"keyId": key_id, "arn": _arn("kms", region, f"key/{key_id}")}


def _kms_replica_key(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    """A replica keeps its primary's multi-Region key id, in its own region."""
    key_id = str(inputs["primaryKeyArn"]).rsplit("key/", 1)[-1]
    return key_id, {"keyId": key_id, "arn": _arn("kms", region, f"key/{key_id}")}


def _kms_alias(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    alias = _name(name, inputs, seed)
    return alias, {"name": alias, "arn": _arn("kms", region, alias)}


def _log_group(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    group = _name(name, inputs, seed)
    return group, {"name": group, "arn": _arn("logs", region, f"log-group:{group}")}


def _event_rule(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    rule = _name(name, inputs, seed)
    return rule, {"name": rule, "arn": _arn("events", region, f"rule/{rule}")}


def _sns_topic(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    topic = _name(name, inputs, seed)
    arn = _arn("sns", region, topic)
    return arn, {"name": topic, "arn": arn}


def _metric_alarm(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    alarm = inputs.get("name") or _name(name, inputs, seed)
    return alarm, {"name": alarm, "arn": _arn("cloudwatch", region, f"alarm:{alarm}")}


def _scaling_policy(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    policy, group = _name(name, inputs, seed), inputs["autoscalingGroupName"]
    arn = _arn("autoscaling", region, f"scalingPolicy:{guid(seed)}:autoScalingGroupName/{group}:policyName/{policy}")
    return policy, {"name": policy, "arn": arn}


def _budget(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    """Budgets are global: the id is ACCOUNT:NAME, the ARN has no region."""
    budget = _name(name, inputs, seed)
    return f"{ACCOUNT}:{budget}", {"name": budget, "accountId": ACCOUNT,
                                   "arn": f"arn:aws:budgets::{ACCOUNT}:budget/{budget}"}


def _lustre(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    """The DNS name is the id under fsx.REGION.amazonaws.com; a PERSISTENT_2 mount name is 8 characters."""
    fs = "fs-" + digest(seed, 17)
    return fs, {"arn": _arn("fsx", region, f"file-system/{fs}"), "dnsName": f"{fs}.fsx.{region}.amazonaws.com",
                "mountName": digest(seed + "mount", 8), "ownerId": ACCOUNT}


def _security_group_rule(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    rule = "sgr-" + digest(seed, 17)
    return rule, {"securityGroupRuleId": rule, "arn": _arn("ec2", region, f"security-group-rule/{rule}")}


def _iam(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    kind, id_prefix = IAM_KINDS[typ]
    physical = _name(name, inputs, seed)
    path = inputs.get("path") or "/"
    arn = f"arn:aws:iam::{ACCOUNT}:{kind}{path}{physical}"
    unique = id_prefix + digest(seed, 17).upper()
    unique_key = "policyId" if typ == "aws:iam/policy:Policy" else "uniqueId"
    return (arn if typ == "aws:iam/policy:Policy" else physical), {"name": physical, "arn": arn, unique_key: unique}


def _service_linked_role(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    service = inputs["awsServiceName"]
    if service not in SERVICE_LINKED_ROLE_NAMES:
        raise LookupError(f"the offline engine does not know the service-linked role name of {service}")
    role = SERVICE_LINKED_ROLE_NAMES[service]
    if suffix := inputs.get("customSuffix"):
        role = f"{role}_{suffix}"
    path = f"/aws-service-role/{service}/"
    arn = f"arn:aws:iam::{ACCOUNT}:role{path}{role}"
    return arn, {"name": role, "path": path, "arn": arn, "uniqueId": "AROA" + digest(seed, 17).upper()}


def _image_builder(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    # Image Builder writes names into ARNs in lower case.
    resource = f"{IMAGE_BUILDER_KINDS[typ]}/{_name(name, inputs, seed).lower()}"
    if typ == "aws:imagebuilder/component:Component":
        resource += f"/{inputs['version']}/1"
    elif typ == "aws:imagebuilder/imageRecipe:ImageRecipe":
        resource += f"/{inputs['version']}"
    arn = _arn("imagebuilder", region, resource)
    return arn, {"name": _name(name, inputs, seed), "arn": arn}


def _image(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    """An image is named after its recipe and version, plus its build number: the first build is /1.
    Its AMIs (outputResources) exist only after a real build, so none is answered here."""
    recipe = str(inputs["imageRecipeArn"])
    arn = recipe.replace(":image-recipe/", ":image/", 1) + "/1"
    return arn, {"arn": arn}


ANSWERS: dict[str, Callable[[str, str, dict[str, Any], str, str], Outputs]] = {
    **dict.fromkeys(EC2_IDS, _ec2),
    **dict.fromkeys(IAM_KINDS, _iam),
    **dict.fromkeys(IMAGE_BUILDER_KINDS, _image_builder),
    "aws:imagebuilder/image:Image": _image,
    "aws:ec2/placementGroup:PlacementGroup": _placement_group,
    "aws:ec2/fleet:Fleet": _fleet,
    "aws:autoscaling/group:Group": _autoscaling_group,
    "aws:kms/key:Key": _kms_key,
    "aws:kms/replicaKey:ReplicaKey": _kms_replica_key,
    "aws:kms/alias:Alias": _kms_alias,
    "aws:cloudwatch/logGroup:LogGroup": _log_group,
    "aws:cloudwatch/eventRule:EventRule": _event_rule,
    "aws:sns/topic:Topic": _sns_topic,
    "aws:iam/serviceLinkedRole:ServiceLinkedRole": _service_linked_role,
    "aws:cloudwatch/metricAlarm:MetricAlarm": _metric_alarm,
    "aws:autoscaling/policy:Policy": _scaling_policy,
    "aws:budgets/budget:Budget": _budget,
    "aws:fsx/lustreFileSystem:LustreFileSystem": _lustre,
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": _security_group_rule,
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": _security_group_rule,
}


def new_resource(typ: str, name: str, inputs: dict[str, Any], region: str) -> Outputs:
    """The physical id and computed outputs of an AWS resource; `region` is the provider's."""
    # pulumi-aws 7 resources may name their own region.
    return answer_from(ANSWERS, typ, name, inputs, inputs.get("region") or region)


def invoke(token: str, region: str, zones: list[str]) -> dict[str, Any] | None:
    """A local answer to an AWS invoke, or None when there is none."""
    answers: dict[str, Callable[[], dict[str, Any]]] = {
        "aws:index/getCallerIdentity:getCallerIdentity": lambda: {
            "accountId": ACCOUNT, "arn": f"arn:aws:iam::{ACCOUNT}:root", "userId": ACCOUNT, "id": ACCOUNT,
        },
        "aws:index/getPartition:getPartition": lambda: {"partition": "aws", "dnsSuffix": "amazonaws.com", "id": "aws"},
        "aws:index/getRegion:getRegion": lambda: {"name": region, "region": region, "id": region},
        "aws:index/getAvailabilityZones:getAvailabilityZones": lambda: {"names": list(zones), "id": region},
    }
    answer = answers.get(token)
    return answer() if answer else None
