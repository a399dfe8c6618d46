"""Alibaba Cloud resource types and values for the alicloud rule tests (pulumi-alicloud's type tokens).

Resource rules run through the SDK's own ResourceValidationArgs (aws_rule_args.validate, which knows no
cloud); stack rules through stack_rule_args.
"""

from __future__ import annotations

from aws_rule_args import validate

SC = "alicloud:ess/scalingConfiguration:ScalingConfiguration"
ASG = "alicloud:ess/scalingGroup:ScalingGroup"
LT = "alicloud:ecs/ecsLaunchTemplate:EcsLaunchTemplate"
INSTANCE = "alicloud:ecs/instance:Instance"
DISK = "alicloud:ecs/ecsDisk:EcsDisk"
KEY = "alicloud:kms/key:Key"
SG = "alicloud:ecs/securityGroup:SecurityGroup"
SG_RULE = "alicloud:ecs/securityGroupRule:SecurityGroupRule"
VSWITCH = "alicloud:vpc/switch:Switch"
RAM_POLICY = "alicloud:ram/policy:Policy"
EVENT_RULE = "alicloud:cms/eventRule:EventRule"
APG = "alicloud:ecs/autoProvisioningGroup:AutoProvisioningGroup"
HOOK = "alicloud:ess/lifecycleHook:LifecycleHook"
KMS_KEY_ID = "key-shh6bd7e5b2xrvdsv6sl3"  # KMS key id shape (key- and lower-case alphanumerics)

__all__ = ["validate"]


def eri_interfaces(count: int, security_group: str = "sg-1") -> list[dict]:
    """A primary ENI and `count` ERIs, as a scaling configuration's networkInterfaces."""
    def interface(kind: str, mode: str) -> dict:
        return {"instanceType": kind, "networkInterfaceTrafficMode": mode, "securityGroupIds": [security_group]}

    return [interface("Primary", "Standard"), *(interface("Secondary", "HighPerformance") for _ in range(count))]
