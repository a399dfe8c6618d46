"""What the offline engine answers in place of AWS: ids, ARNs and invokes in the shapes AWS returns.

Every computed output the program feeds into another input has the provider's shape (an `eipalloc-`
allocation id, `arn:aws:logs:R:A:log-group:NAME`, a multi-Region key's `mrk-` id...). Values are
derived from the resource's type and name, so two plans of one stack are identical. A resource type
with no entry here gets an opaque id and no computed outputs: give it an answer before the program
feeds one of its outputs anywhere.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from ..mock_ids import Outputs, answer_from, digest, guid

ACCOUNT = "123456789012"  # the offline engine's stand-in AWS account
# The stand-in identity that runs the program: a role assumed by a deploy pipeline, as a CI run calls AWS
# (STS GetCallerIdentity answers an assumed role as arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION).
DEPLOYER_ROLE, DEPLOYER_SESSION = "gpufleet-deployer", "gpufleet-plan"
DEPLOYER_ROLE_ID = "AROA" + "0" * 17

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
    "aws:ec2/instance:Instance": ("i-", "instance"),
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
    if typ == "aws:ec2/instance:Instance":
        # A private address as EC2 gives one: the engine cannot know the subnet's range, so a stand-in in 10/8.
        third, fourth = (int(digest(seed + part, 2), 16) for part in ("c", "d"))
        outputs["privateIp"] = f"10.0.{third}.{max(fourth, 4)}"
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


def _eks_cluster(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    """What EKS fills in (DescribeCluster, Cluster object: EKS API reference): the endpoint
    https://<32 hex>.<suffix>.<region>.eks.amazonaws.com, the CA as base64 PEM, the OIDC issuer, the service range
    it picks when none is given (10.100.0.0/16 or 172.20.0.0/16, whichever the VPC does not overlap: 172.20.0.0/16
    for the stacks' 10.x VPCs) and the security group it makes for the control plane."""
    cluster = _name(name, inputs, seed)
    oidc = digest(seed + "oidc", 32).upper()
    network = {"ipFamily": "ipv4", "serviceIpv4Cidr": "172.20.0.0/16", **(inputs.get("kubernetesNetworkConfig") or {})}
    vpc = {**(inputs.get("vpcConfig") or {}), "clusterSecurityGroupId": "sg-" + digest(seed + "sg", 17),
           "vpcId": "vpc-" + digest(seed + "vpc", 17)}
    pem = f"-----BEGIN CERTIFICATE-----\n{digest(seed + 'ca', 64)}\n-----END CERTIFICATE-----\n"
    return cluster, {
        "name": cluster,
        "arn": _arn("eks", region, f"cluster/{cluster}"),
        "endpoint": f"https://{digest(seed, 32).upper()}.gr7.{region}.eks.amazonaws.com",
        "certificateAuthority": {"data": base64.b64encode(pem.encode()).decode()},
        "identities": [{"oidcs": [{"issuer": f"https://oidc.eks.{region}.amazonaws.com/id/{oidc}"}]}],
        "kubernetesNetworkConfig": network,
        "vpcConfig": vpc,
        "platformVersion": "eks.1",
        "status": "ACTIVE",
        "clusterId": guid(seed),
    }


def _eks_addon(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    """Id CLUSTER:ADDON; the ARN carries the add-on's own GUID (EKS API reference, Addon)."""
    cluster, addon = inputs["clusterName"], inputs["addonName"]
    return f"{cluster}:{addon}", {"arn": _arn("eks", region, f"addon/{cluster}/{addon}/{guid(seed)}")}


def _eks_access_entry(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    """Id CLUSTER:PRINCIPAL; EKS names the entry's user after the principal (STANDARD: its ARN with the role's
    session; EC2_LINUX: system:node:{{EC2PrivateDNSName}} in system:nodes)."""
    cluster, principal = inputs["clusterName"], inputs["principalArn"]
    node = inputs.get("type") == "EC2_LINUX"
    return f"{cluster}:{principal}", {
        "accessEntryArn": _arn("eks", region, f"access-entry/{cluster}/{guid(seed)}"),
        "userName": "system:node:{{EC2PrivateDNSName}}" if node else f"{principal}/{{{{SessionName}}}}",
        "kubernetesGroups": ["system:nodes"] if node else [],
        "createdAt": "2025-01-01T00:00:00Z",
    }


def _eks_policy_association(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    """Id CLUSTER#PRINCIPAL#POLICY, as the provider writes it."""
    return f"{inputs['clusterName']}#{inputs['principalArn']}#{inputs['policyArn']}", {
        "associatedAt": "2025-01-01T00:00:00Z"}


def _eks_node_group(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    """Id CLUSTER:NODEGROUP, as the provider writes it; EKS makes the group's Auto Scaling group and names it
    eks-<node group>-<the node group's uuid> (Nodegroup.resources.autoScalingGroups[].name, EKS API reference)."""
    group = inputs.get("nodeGroupName") or f"{name}-{digest(seed, 7)}"
    uuid = guid(seed)
    return f"{inputs['clusterName']}:{group}", {
        "nodeGroupName": group,
        "arn": _arn("eks", region, f"nodegroup/{inputs['clusterName']}/{group}/{uuid}"),
        "resources": [{"autoscalingGroups": [{"name": f"eks-{group}-{uuid}"}], "remoteAccessSecurityGroupId": ""}],
        "status": "ACTIVE",
    }


def _eks_pod_identity(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    """An association id is a-<17 lower-case letters and digits>; its ARN names the cluster."""
    association = "a-" + digest(seed, 17)
    return association, {"associationId": association, "associationArn": _arn(
        "eks", region, f"podidentityassociation/{inputs['clusterName']}/{association}")}


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


def _secret(typ: str, name: str, inputs: dict[str, Any], region: str, seed: str) -> Outputs:
    """Secrets Manager ends a secret's ARN in its name, a dash and six random characters (Secrets Manager user
    guide, "Secret ARN"); the id is the ARN."""
    arn = _arn("secretsmanager", region, f"secret:{_name(name, inputs, seed)}-{digest(seed + 'arn', 6)}")
    return arn, {"arn": arn}


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
    "aws:eks/cluster:Cluster": _eks_cluster,
    "aws:eks/addon:Addon": _eks_addon,
    "aws:eks/accessEntry:AccessEntry": _eks_access_entry,
    "aws:eks/accessPolicyAssociation:AccessPolicyAssociation": _eks_policy_association,
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": _eks_pod_identity,
    "aws:eks/nodeGroup:NodeGroup": _eks_node_group,
    "aws:fsx/lustreFileSystem:LustreFileSystem": _lustre,
    "aws:secretsmanager/secret:Secret": _secret,
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
            "accountId": ACCOUNT, "arn": f"arn:aws:sts::{ACCOUNT}:assumed-role/{DEPLOYER_ROLE}/{DEPLOYER_SESSION}",
            "userId": f"{DEPLOYER_ROLE_ID}:{DEPLOYER_SESSION}", "id": ACCOUNT,
        },
        # The session context of that caller: the role behind the assumed-role session (IAM GetRole, by name).
        "aws:iam/getSessionContext:getSessionContext": lambda: {
            "arn": f"arn:aws:sts::{ACCOUNT}:assumed-role/{DEPLOYER_ROLE}/{DEPLOYER_SESSION}",
            "issuerArn": f"arn:aws:iam::{ACCOUNT}:role/{DEPLOYER_ROLE}", "issuerId": DEPLOYER_ROLE_ID,
            "issuerName": DEPLOYER_ROLE, "sessionName": DEPLOYER_SESSION, "id": ACCOUNT,
        },
        "aws:index/getPartition:getPartition": lambda: {"partition": "aws", "dnsSuffix": "amazonaws.com", "id": "aws"},
        "aws:index/getRegion:getRegion": lambda: {"name": region, "region": region, "id": region},
        "aws:index/getAvailabilityZones:getAvailabilityZones": lambda: {"names": list(zones), "id": region},
    }
    answer = answers.get(token)
    return answer() if answer else None
