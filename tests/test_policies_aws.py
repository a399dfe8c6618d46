"""AWS resource rules: each fires on a bad resource and passes a good one, through real SDK args."""

from __future__ import annotations

import json
import sys
import types
from typing import Any

import pytest
from pulumi_policy import PolicyCustomTimeouts, PolicyResourceOptions, ResourceValidationArgs
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, unknown_checking_proxy

from policies.registry import RULES_BY_NAME

LT = "aws:ec2/launchTemplate:LaunchTemplate"
INSTANCE = "aws:ec2/instance:Instance"
ASG = "aws:autoscaling/group:Group"
FLEET = "aws:ec2/fleet:Fleet"
GOOD_AMI = "ami-0123456789abcdef0"
CMK = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def validate(
    rule: str, resource_type: str, props: dict[str, Any], config: dict[str, Any] | None = None
) -> list[str]:
    found: list[str] = []
    args = ResourceValidationArgs(
        resource_type,
        unknown_checking_proxy(json.loads(json.dumps(props))),
        f"urn:pulumi:dev::gpufleet::{resource_type}::r",
        "r",
        PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], None),
        None,
        config or {},
    )
    RULES_BY_NAME[rule].policy.validate(args, lambda message, urn=None: found.append(message))
    return found


class FakeLockError(Exception):
    pass


@pytest.fixture
def lock(monkeypatch):
    module = types.ModuleType("components.lock")
    state: dict[str, Any] = {"error": None}

    class Lock:
        def image_ids(self, cloud: str) -> set[str]:
            return {GOOD_AMI} if cloud == "aws" else set()

    def load_lock(path=None):
        if state["error"]:
            raise FakeLockError(state["error"])
        return Lock()

    module.load_lock = load_lock
    module.LockError = FakeLockError
    monkeypatch.setitem(sys.modules, "components.lock", module)
    return state


def efa_interfaces(count: int, cards: list[int] | None = None) -> list[dict[str, Any]]:
    cards = cards if cards is not None else list(range(count))
    return [
        {
            "interfaceType": "efa",
            "networkCardIndex": card,
            "deviceIndex": 0 if card == 0 else 1,
            "securityGroups": ["sg-1"],
        }
        for card in cards
    ]


# encryption -----------------------------------------------------------------------------------------


def test_volume_unencrypted_fails():
    (message,) = validate("aws-ebs-volume-cmk-encryption", "aws:ebs/volume:Volume", {"encrypted": False})
    assert "not encrypted" in message and "kms_key_id" in message


def test_volume_aws_managed_key_fails():
    props = {"encrypted": True, "kmsKeyId": "alias/aws/ebs"}
    (message,) = validate("aws-ebs-volume-cmk-encryption", "aws:ebs/volume:Volume", props)
    assert "AWS-managed key alias/aws/ebs" in message


def test_volume_with_cmk_passes():
    props = {"encrypted": True, "kmsKeyId": CMK}
    assert validate("aws-ebs-volume-cmk-encryption", "aws:ebs/volume:Volume", props) == []


def test_launch_template_block_device_without_cmk_fails():
    props = {"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"encrypted": "true"}}]}
    (message,) = validate("aws-block-device-cmk-encryption", LT, props)
    assert message.startswith("block_device_mappings[0].ebs is encrypted with the AWS-managed key")


def test_launch_template_unencrypted_string_false_fails():
    props = {"blockDeviceMappings": [{"ebs": {"encrypted": "false", "kmsKeyId": CMK}}]}
    (message,) = validate("aws-block-device-cmk-encryption", LT, props)
    assert "is not encrypted" in message


def test_launch_template_block_device_with_cmk_passes():
    props = {
        "blockDeviceMappings": [
            {"deviceName": "/dev/xvda", "ebs": {"encrypted": "true", "kmsKeyId": CMK}},
            {"deviceName": "/dev/sdb", "virtualName": "ephemeral0"},
        ]
    }
    assert validate("aws-block-device-cmk-encryption", LT, props) == []


def test_instance_without_root_device_fails_and_with_cmk_passes():
    (message,) = validate("aws-block-device-cmk-encryption", INSTANCE, {})
    assert "root_block_device" in message
    props = {"rootBlockDevice": {"encrypted": True, "kmsKeyId": CMK}}
    assert validate("aws-block-device-cmk-encryption", INSTANCE, props) == []


def test_kms_rotation_off_fails_on_passes():
    (message,) = validate("aws-kms-key-rotation", "aws:kms/key:Key", {"enableKeyRotation": False})
    assert "enable_key_rotation = True" in message
    assert validate("aws-kms-key-rotation", "aws:kms/key:Key", {"enableKeyRotation": True}) == []


def test_kms_rotation_not_applicable_to_asymmetric_keys():
    from pulumi_policy.policy import _NotApplicableError

    with pytest.raises(_NotApplicableError):
        validate("aws-kms-key-rotation", "aws:kms/key:Key", {"customerMasterKeySpec": "RSA_2048"})


def test_kms_deletion_window_short_fails_default_passes():
    (message,) = validate("aws-kms-key-deletion-window", "aws:kms/key:Key", {"deletionWindowInDays": 5})
    assert "deletion_window_in_days is 5" in message
    assert validate("aws-kms-key-deletion-window", "aws:kms/key:Key", {}) == []
    assert validate("aws-kms-key-deletion-window", "aws:kms/key:Key", {"deletionWindowInDays": 7}) == []


# metadata and exposure ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("resource_type", "block", "arg"),
    [
        (LT, "metadataOptions", "metadata_options"),
        (INSTANCE, "metadataOptions", "metadata_options"),
        (
            "aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration",
            "instanceMetadataOptions",
            "instance_metadata_options",
        ),
    ],
)
def test_imdsv2(resource_type, block, arg):
    (message,) = validate("aws-imdsv2-required", resource_type, {block: {"httpTokens": "optional"}})
    assert f"set {arg}.http_tokens = 'required'" in message
    (message,) = validate("aws-imdsv2-required", resource_type, {})
    assert "not set (defaults to 'optional')" in message
    assert validate("aws-imdsv2-required", resource_type, {block: {"httpTokens": "required"}}) == []


def test_imdsv2_unknown_value_is_not_a_violation():
    props = {"metadataOptions": {"httpTokens": UNKNOWN_STRING_VALUE}}
    assert validate("aws-imdsv2-required", LT, props) == []


def test_inline_ssh_from_internet_fails():
    props = {"ingress": [{"protocol": "tcp", "fromPort": 22, "toPort": 22, "cidrBlocks": ["0.0.0.0/0"]}]}
    (message,) = validate("aws-no-public-admin-ingress", "aws:ec2/securityGroup:SecurityGroup", props)
    assert message.startswith("ingress[0] opens port 22 to 0.0.0.0/0") and "admin_cidrs" in message


def test_inline_all_traffic_from_ipv6_internet_fails():
    props = {"ingress": [{"protocol": "-1", "fromPort": 0, "toPort": 0, "ipv6CidrBlocks": ["::/0"]}]}
    (message,) = validate("aws-no-public-admin-ingress", "aws:ec2/securityGroup:SecurityGroup", props)
    assert "opens all ports to ::/0" in message


def test_security_group_rule_rdp_fails_and_vpc_rule_all_fails():
    rule = {
        "type": "ingress",
        "protocol": "tcp",
        "fromPort": 3000,
        "toPort": 4000,
        "cidrBlocks": ["0.0.0.0/0"],
        "securityGroupId": "sg-1",
    }
    (message,) = validate("aws-no-public-admin-ingress", "aws:ec2/securityGroupRule:SecurityGroupRule", rule)
    assert "opens port 3389 to 0.0.0.0/0" in message
    vpc_rule = {"ipProtocol": "-1", "cidrIpv4": "0.0.0.0/0", "securityGroupId": "sg-1"}
    (message,) = validate(
        "aws-no-public-admin-ingress", "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", vpc_rule
    )
    assert "opens all ports to 0.0.0.0/0" in message


def test_admin_ingress_passes_for_https_internal_ssh_and_egress():
    props = {
        "ingress": [
            {"protocol": "tcp", "fromPort": 443, "toPort": 443, "cidrBlocks": ["0.0.0.0/0"]},
            {"protocol": "tcp", "fromPort": 22, "toPort": 22, "cidrBlocks": ["10.0.0.0/8"]},
            {"protocol": "-1", "fromPort": 0, "toPort": 0, "self": True},
        ],
        "egress": [{"protocol": "-1", "fromPort": 0, "toPort": 0, "cidrBlocks": ["0.0.0.0/0"]}],
    }
    assert validate("aws-no-public-admin-ingress", "aws:ec2/securityGroup:SecurityGroup", props) == []
    egress = {"type": "egress", "protocol": "-1", "fromPort": 0, "toPort": 0, "cidrBlocks": ["0.0.0.0/0"]}
    assert (
        validate("aws-no-public-admin-ingress", "aws:ec2/securityGroupRule:SecurityGroupRule", egress) == []
    )


def test_public_ip_on_gpu_launch_template_fails_private_passes():
    props = {"networkInterfaces": [{"deviceIndex": 0, "associatePublicIpAddress": "true"}]}
    (message,) = validate("aws-no-public-ip", LT, props)
    assert "network_interfaces[0] asks for a public IP" in message
    props = {"networkInterfaces": [{"deviceIndex": 0, "associatePublicIpAddress": "false"}]}
    assert validate("aws-no-public-ip", LT, props) == []
    (message,) = validate("aws-no-public-ip", INSTANCE, {"associatePublicIpAddress": True})
    assert "associate_public_ip_address = False" in message


def test_security_groups_at_template_level_beside_interfaces_fail():
    props = {"vpcSecurityGroupIds": ["sg-1"], "networkInterfaces": efa_interfaces(1)}
    (message,) = validate("aws-launch-template-sg-on-interfaces", LT, props)
    assert "vpc_security_group_ids is set beside network_interfaces" in message
    assert (
        validate("aws-launch-template-sg-on-interfaces", LT, {"networkInterfaces": efa_interfaces(1)}) == []
    )
    assert validate("aws-launch-template-sg-on-interfaces", LT, {"vpcSecurityGroupIds": ["sg-1"]}) == []


# IAM ------------------------------------------------------------------------------------------------


def doc(*statements: dict[str, Any], as_list: bool = True) -> str:
    body = list(statements) if as_list else statements[0]
    return json.dumps({"Version": "2012-10-17", "Statement": body})


@pytest.mark.parametrize("action", ["*", "s3:*", "ec2:Describe*", ["logs:PutLogEvents", "s3:Get*"]])
def test_wildcard_actions_fail(action):
    policy = doc({"Effect": "Allow", "Action": action, "Resource": "*"}, as_list=False)
    (message,) = validate("aws-iam-no-wildcard-actions", "aws:iam/rolePolicy:RolePolicy", {"policy": policy})
    assert message.startswith("policy statement 1 allows wildcard actions") and "exact actions" in message


def test_exact_actions_and_wildcard_deny_pass():
    policy = doc(
        {"Effect": "Allow", "Action": ["ec2:DescribeInstances", "logs:PutLogEvents"], "Resource": "*"},
        {"Effect": "Deny", "Action": "*", "Resource": "arn:aws:s3:::secret/*"},
    )
    assert validate("aws-iam-no-wildcard-actions", "aws:iam/policy:Policy", {"policy": policy}) == []


def test_role_inline_policy_wildcard_fails():
    props = {
        "inlinePolicies": [
            {"name": "x", "policy": doc({"Effect": "Allow", "Action": "iam:*", "Resource": "*"})}
        ]
    }
    (message,) = validate("aws-iam-no-wildcard-actions", "aws:iam/role:Role", props)
    assert message.startswith("inline_policies[0] statement 1 allows wildcard actions iam:*")


def test_malformed_policy_document_is_reported():
    (message,) = validate("aws-iam-no-wildcard-actions", "aws:iam/policy:Policy", {"policy": "{not json"})
    assert message.startswith("policy is not valid JSON")


def test_notaction_allow_fails_deny_passes():
    policy = doc({"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"})
    (message,) = validate("aws-iam-no-notaction", "aws:iam/policy:Policy", {"policy": policy})
    assert "allows NotAction" in message
    policy = doc({"Effect": "Deny", "NotAction": ["s3:GetObject"], "Resource": "*"})
    assert validate("aws-iam-no-notaction", "aws:iam/policy:Policy", {"policy": policy}) == []


def test_passrole_on_any_resource_fails_scoped_passes():
    policy = doc({"Effect": "Allow", "Action": ["iam:PassRole"], "Resource": "*"})
    (message,) = validate("aws-iam-passrole-scoped", "aws:iam/rolePolicy:RolePolicy", {"policy": policy})
    assert "iam:PassRole on Resource '*'" in message and "role ARNs" in message
    policy = doc(
        {"Effect": "Allow", "Action": "iam:PassRole", "Resource": "arn:aws:iam::111122223333:role/node"}
    )
    assert validate("aws-iam-passrole-scoped", "aws:iam/rolePolicy:RolePolicy", {"policy": policy}) == []


@pytest.mark.parametrize("principal", ["*", {"AWS": "*"}, {"AWS": ["arn:aws:iam::111122223333:root", "*"]}])
def test_trust_policy_wildcard_principal_fails(principal):
    trust = doc({"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": principal})
    (message,) = validate(
        "aws-iam-trust-no-wildcard-principal", "aws:iam/role:Role", {"assumeRolePolicy": trust}
    )
    assert "any principal ('*')" in message


def test_trust_policy_service_principal_passes():
    trust = doc(
        {"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"Service": "ec2.amazonaws.com"}}
    )
    assert (
        validate("aws-iam-trust-no-wildcard-principal", "aws:iam/role:Role", {"assumeRolePolicy": trust})
        == []
    )


# images ---------------------------------------------------------------------------------------------


def test_image_from_ssm_fails(lock):
    props = {"imageId": "resolve:ssm:/aws/service/deeplearning/ami/x86_64/latest"}
    (message,) = validate("aws-image-pinned", LT, props)
    assert "resolves at launch time" in message and "images/lock.yaml" in message


def test_image_not_a_literal_ami_fails(lock):
    (message,) = validate("aws-image-pinned", LT, {"imageId": "my-golden-image"})
    assert "is not a literal AMI id" in message


def test_image_not_in_lock_fails_pinned_passes(lock):
    (message,) = validate("aws-image-pinned", LT, {"imageId": "ami-0fedcba9876543210"})
    assert "'ami-0fedcba9876543210' is not pinned in images/lock.yaml" in message
    assert validate("aws-image-pinned", LT, {"imageId": GOOD_AMI}) == []


def test_image_recipe_parent_image(lock):
    recipe = "aws:imagebuilder/imageRecipe:ImageRecipe"
    arn = "arn:aws:imagebuilder:us-east-1:aws:image/ubuntu-server-22-lts-x86/x.x.x"
    (message,) = validate("aws-image-pinned", recipe, {"parentImage": arn})
    assert message.startswith("parent_image") and "is not a pinnable parent image" in message
    assert validate("aws-image-pinned", recipe, {"parentImage": GOOD_AMI}) == []
    ssm = "ssm:/aws/service/canonical/ubuntu/server/22.04/stable/current/amd64/hvm/ebs-gp2/ami-id"
    (message,) = validate("aws-image-pinned", recipe, {"parentImage": ssm})
    assert "is not pinned in images/lock.yaml: use the parent image pinned in images/lock.yaml base_images" in message


UNBAKED_TAGS = {"gpufleet:image-profile": "cuda12.8-r580", "gpufleet:image-status": "unbaked",
                "gpufleet:image-stack": "aws-images"}


def test_unbaked_launch_template_is_advisory_and_names_the_pin_command(lock):
    (message,) = validate("aws-image-unbaked", LT, {"tags": UNBAKED_TAGS})
    assert "image profile 'cuda12.8-r580' is not baked for this region yet" in message
    assert "`pulumi up --stack aws-images`" in message and "`gpufleet images pin --stack aws-images`" in message
    assert RULES_BY_NAME["aws-image-unbaked"].policy.enforcement_level.value == "advisory"
    # The mandatory rule leaves an unbaked template to this one, and still refuses an unmarked missing id.
    assert validate("aws-image-pinned", LT, {"tags": UNBAKED_TAGS}) == []
    (missing,) = validate("aws-image-pinned", LT, {"tags": {"team": "ml"}})
    assert missing.startswith("image_id is not set")


def test_baked_launch_template_passes_the_unbaked_rule(lock):
    baked = {**UNBAKED_TAGS, "gpufleet:image-status": "baked"}
    assert validate("aws-image-unbaked", LT, {"imageId": GOOD_AMI, "tags": baked}) == []
    assert validate("aws-image-unbaked", LT, {"imageId": GOOD_AMI}) == []
    # No stack bakes it yet (Azure, Alibaba): the message says so instead of naming one.
    (message,) = validate("aws-image-unbaked", LT, {"tags": {k: v for k, v in UNBAKED_TAGS.items()
                                                             if k != "gpufleet:image-stack"}})
    assert "no image stack bakes it yet" in message


def test_image_lock_unreadable_is_reported(lock):
    lock["error"] = "images/lock.yaml: profiles: missing"
    (message,) = validate("aws-image-pinned", LT, {"imageId": GOOD_AMI})
    assert "images/lock.yaml could not be read (images/lock.yaml: profiles: missing)" in message


# scaling groups -------------------------------------------------------------------------------------


def test_floating_template_versions_are_reported():
    props = {"launchTemplate": {"id": "lt-1", "version": "$Latest"}}
    (message,) = validate("aws-launch-template-version-pinned", ASG, props)
    assert "launch_template.version is $Latest" in message and "latest_version" in message
    (message,) = validate("aws-launch-template-version-pinned", ASG, {"launchTemplate": {"id": "lt-1"}})
    assert "not set ($Default)" in message
    fleet = {
        "launchTemplateConfigs": [
            {"launchTemplateSpecification": {"launchTemplateId": "lt-1", "version": "$Default"}}
        ]
    }
    (message,) = validate("aws-launch-template-version-pinned", FLEET, fleet)
    assert message.startswith("launch_template_configs[0].launch_template_specification.version is $Default")


def test_explicit_template_version_passes():
    props = {
        "mixedInstancesPolicy": {
            "launchTemplate": {
                "launchTemplateSpecification": {"launchTemplateId": "lt-1", "version": "3"},
                "overrides": [{"instanceType": "p5.48xlarge"}],
            }
        }
    }
    assert validate("aws-launch-template-version-pinned", ASG, props) == []


def spot_asg(strategy: str | None) -> dict[str, Any]:
    distribution: dict[str, Any] = {"onDemandBaseCapacity": 0, "onDemandPercentageAboveBaseCapacity": 0}
    if strategy:
        distribution["spotAllocationStrategy"] = strategy
    return {"mixedInstancesPolicy": {"instancesDistribution": distribution}}


def test_spot_allocation_strategy():
    (message,) = validate("aws-spot-allocation-strategy", ASG, spot_asg("lowest-price"))
    assert "'price-capacity-optimized'" in message
    (message,) = validate("aws-spot-allocation-strategy", ASG, spot_asg(None))
    assert "not set (lowest-price)" in message
    assert validate("aws-spot-allocation-strategy", ASG, spot_asg("price-capacity-optimized")) == []
    assert validate("aws-spot-allocation-strategy", ASG, {"launchTemplate": {"id": "lt-1"}}) == []


# EFA interface count --------------------------------------------------------------------------------

REQUIRED = {"rdmaRequiredInstanceTypes": ["p5.48xlarge"]}


def test_efa_full_layout_passes():
    props = {"instanceType": "p5.48xlarge", "networkInterfaces": efa_interfaces(32)}
    assert validate("aws-efa-interface-count", LT, props, REQUIRED) == []


def test_efa_missing_interfaces_fail_when_required():
    props = {"instanceType": "p5.48xlarge", "networkInterfaces": efa_interfaces(31)}
    (message,) = validate("aws-efa-interface-count", LT, props, REQUIRED)
    assert message.startswith("p5.48xlarge takes 32 EFA interfaces but the template declares 31")


def test_efa_duplicate_card_and_missing_primary_fail():
    cards = [0, *range(1, 31), 30]
    props = {"instanceType": "p5.48xlarge", "networkInterfaces": efa_interfaces(32, cards)}
    (message,) = validate("aws-efa-interface-count", LT, props, REQUIRED)
    assert "use each network_card_index 0..31 exactly once" in message
    interfaces = efa_interfaces(32)
    interfaces[0]["deviceIndex"] = 1
    props = {"instanceType": "p5.48xlarge", "networkInterfaces": interfaces}
    (message,) = validate("aws-efa-interface-count", LT, props, REQUIRED)
    assert "set device_index = 0 on card 0" in message


def test_efa_required_on_type_without_efa_fails():
    props = {"instanceType": "g4dn.xlarge", "networkInterfaces": []}
    (message,) = validate(
        "aws-efa-interface-count", LT, props, {"rdmaRequiredInstanceTypes": ["g4dn.xlarge"]}
    )
    assert "no EFA in the catalog, yet RDMA is required" in message


def test_efa_count_rules_split_required_and_other_types():
    props = {"instanceType": "p5.48xlarge", "networkInterfaces": []}
    assert validate("aws-efa-interface-count", LT, props, {"rdmaRequiredInstanceTypes": []}) == []
    (message,) = validate("aws-efa-interface-count-advisory", LT, props, {"rdmaRequiredInstanceTypes": []})
    assert "takes 32 EFA interfaces but the template declares 0" in message
    assert validate("aws-efa-interface-count-advisory", LT, props, REQUIRED) == []
