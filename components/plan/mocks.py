"""Answers the offline engine gives in place of the cloud: deterministic ids, computed outputs, invokes.

Outputs a provider computes (ids, ARNs, a launch template's latest version) are derived from the
resource's URN, so two plans of one stack are identical. Invokes (availability zones, caller
identity...) are answered from local data; an invoke with no local answer fails loudly rather than
returning something a real run would not.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pulumi

OFFLINE_ACCOUNT = "123456789012"  # the offline engine's stand-in AWS account
OFFLINE_SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"

# Resource type -> prefix of the physical id the provider would return.
AWS_ID_PREFIX = {
    "aws:ec2/vpc:Vpc": "vpc-",
    "aws:ec2/subnet:Subnet": "subnet-",
    "aws:ec2/securityGroup:SecurityGroup": "sg-",
    "aws:ec2/launchTemplate:LaunchTemplate": "lt-",
    "aws:ec2/natGateway:NatGateway": "nat-",
    "aws:ec2/eip:Eip": "eipalloc-",
    "aws:ec2/internetGateway:InternetGateway": "igw-",
    "aws:ec2/routeTable:RouteTable": "rtb-",
    "aws:ec2/vpcEndpoint:VpcEndpoint": "vpce-",
    "aws:ec2/placementGroup:PlacementGroup": "pg-",
    "aws:ec2/fleet:Fleet": "fleet-",
    "aws:ebs/volume:Volume": "vol-",
}

IAM_ARN_KIND = {
    "aws:iam/role:Role": "role",
    "aws:iam/instanceProfile:InstanceProfile": "instance-profile",
    "aws:iam/policy:Policy": "policy",
}


class UnansweredInvoke(RuntimeError):
    """The program called an invoke the offline engine has no local data for."""


def digest(text: str, length: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def _aws_outputs(typ: str, name: str, urn_key: str, inputs: dict[str, Any], region: str) -> tuple[str, dict]:
    service = typ.split(":")[1].split("/")[0]
    prefix = AWS_ID_PREFIX.get(typ)
    if typ == "aws:kms/key:Key":
        key_hex = digest(urn_key, 32)
        physical = f"{key_hex[:8]}-{key_hex[8:12]}-{key_hex[12:16]}-{key_hex[16:20]}-{key_hex[20:]}"
    elif prefix:
        physical = prefix + digest(urn_key, 17)
    else:
        # Names the provider would generate: the logical name plus a random suffix, here a hash.
        physical = inputs.get("name") or f"{name}-{digest(urn_key, 7)}"
    resource = physical if typ != "aws:kms/key:Key" else f"key/{physical}"
    outputs: dict[str, Any] = {
        "arn": f"arn:aws:{service}:{region}:{OFFLINE_ACCOUNT}:{resource}",
    }
    if "name" not in inputs and not prefix and typ != "aws:kms/key:Key":
        outputs["name"] = physical
    if typ == "aws:kms/key:Key":
        outputs["keyId"] = physical
    if typ == "aws:ec2/launchTemplate:LaunchTemplate":
        outputs.update(latestVersion=1, defaultVersion=1)
    if typ == "aws:ec2/placementGroup:PlacementGroup":
        outputs["name"] = inputs.get("name") or f"{name}-{digest(urn_key, 7)}"
        outputs["placementGroupId"] = physical
    if typ in IAM_ARN_KIND:
        outputs["arn"] = f"arn:aws:iam::{OFFLINE_ACCOUNT}:{IAM_ARN_KIND[typ]}/{physical}"
        outputs["uniqueId"] = "AROA" + digest(urn_key, 16).upper()
    return physical, outputs


class OfflineMocks(pulumi.runtime.Mocks):
    """Deterministic stand-ins for providers; `region` and `zones` answer the region invokes."""

    def __init__(self, region: str, zones: list[str]) -> None:
        self.region = region
        self.zones = zones

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        urn_key = f"{args.typ}::{args.name}"
        if args.typ.startswith("aws:"):
            physical, outputs = _aws_outputs(args.typ, args.name, urn_key, args.inputs, self.region)
        else:
            physical, outputs = f"{args.name}-{digest(urn_key, 8)}", {}
        return physical, {**args.inputs, **outputs}

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict:
        answers = {
            "aws:index/getCallerIdentity:getCallerIdentity": lambda: {
                "accountId": OFFLINE_ACCOUNT, "arn": f"arn:aws:iam::{OFFLINE_ACCOUNT}:root",
                "userId": OFFLINE_ACCOUNT, "id": OFFLINE_ACCOUNT,
            },
            "aws:index/getPartition:getPartition": lambda: {
                "partition": "aws", "dnsSuffix": "amazonaws.com", "id": "aws",
            },
            "aws:index/getRegion:getRegion": lambda: {"name": self.region, "region": self.region, "id": self.region},
            "aws:index/getAvailabilityZones:getAvailabilityZones": lambda: {
                "names": list(self.zones), "id": self.region,
            },
        }
        if args.token not in answers:
            raise UnansweredInvoke(f"the offline engine has no local answer for invoke {args.token}")
        return answers[args.token]()
