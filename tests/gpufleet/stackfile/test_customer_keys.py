"""Data at rest is under the stack's customer key on every cloud and in every image pipeline: provider-managed
keys in any spelling, blank keys, keys of another region or of another account than the stack names are
refused by the spec (exit 2, naming the field) and by the encryption rules."""

from __future__ import annotations

import copy
from typing import Any

from aws_rule_args import validate
from conftest import read_cluster
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile import SpecInvalid, validate_images

DISTRIBUTION = "aws:imagebuilder/distributionConfiguration:DistributionConfiguration"
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ACCOUNT = "111122223333"
OTHER_ACCOUNT = "444455556666"
KEY_ID = "1234abcd-12ab-34cd-56ef-1234567890ab"

services = st.from_regex(r"[a-z][a-z0-9-]{1,15}", fullmatch=True)
cases = st.sampled_from([str.lower, str.upper, str.title])  # KMS aliases are case-sensitive; be strict anyway


def _aws_managed(service: str, region: str, arn: bool) -> str:
    return f"arn:aws:kms:{region}:{ACCOUNT}:alias/aws/{service}" if arn else f"alias/aws/{service}"


def _distribution(key: str) -> dict[str, Any]:
    return {"distributions": [{"region": "us-east-1", "amiDistributionConfiguration": {"kmsKeyId": key}}]}


def _cluster_errors(stack: str, key: str, **identity: Any) -> list[str]:
    raw = copy.deepcopy(read_cluster(stack))
    raw.setdefault("storage", {})["kms_key"] = key
    raw.setdefault("identity", {}).update(identity)
    try:
        resolve_cluster(raw)
    except SpecInvalid as caught:
        return [str(e) for e in caught.errors if str(e).startswith("storage.kms_key")]
    return []


def _images_errors(**fields: Any) -> list[str]:
    raw = {"name": "images", "cloud": "aws", "regions": ["us-east-1", "us-west-2"], "profile": "cuda12.8-r580",
           "build_instance_types": ["g5.2xlarge"], **fields}
    try:
        validate_images(raw)
    except SpecInvalid as caught:
        return [str(e) for e in caught.errors if "kms_key" in str(e)]
    return []


@SETTINGS
@given(services, st.booleans())
def test_aws_managed_keys_refused_by_spec_and_rules(service: str, arn: bool) -> None:
    key = _aws_managed(service, "us-east-1", arn)
    assert _cluster_errors("aws-train-p5", key)
    ebs = {"encrypted": "true", "kmsKeyId": key}
    assert validate("aws-block-device-cmk-encryption", "aws:ec2/launchTemplate:LaunchTemplate",
                    {"blockDeviceMappings": [{"deviceName": "/dev/sda1", "ebs": ebs}]})
    assert validate("aws-image-pipeline-cmk", "aws:imagebuilder/imageRecipe:ImageRecipe",
                    {"blockDeviceMappings": [{"deviceName": "/dev/sda1", "ebs": ebs}]})
    assert validate("aws-image-pipeline-cmk", DISTRIBUTION, _distribution(key))


@SETTINGS
@given(services)
def test_aws_image_stack_refuses_managed_keys(service: str) -> None:
    build = _aws_managed(service, "us-east-1", arn=True)
    replica = _aws_managed(service, "us-west-2", arn=True)
    good_replica = f"arn:aws:kms:us-west-2:{ACCOUNT}:key/{KEY_ID}"
    assert _images_errors(kms_key=build, replica_kms_keys={"us-west-2": good_replica})
    build_key = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/{KEY_ID}"
    assert _images_errors(kms_key=build_key, replica_kms_keys={"us-west-2": replica})


@SETTINGS
@given(services, cases)
def test_alicloud_service_keys_refused_by_spec_and_rules(service: str, case: Any) -> None:
    key = case(f"alias/acs/{service}")
    assert _cluster_errors("alicloud-train-ebmgn8v", key)
    disk = {"encrypted": True, "kmsKeyId": key}
    found = validate("alicloud-disk-cmk-encryption", "alicloud:ecs/ecsDisk:EcsDisk", disk)
    assert found and "service key" in found[0]


@SETTINGS
@given(st.text(alphabet=" \t\n\u00a0", min_size=1, max_size=4),
       st.sampled_from(["aws-train-p5", "alicloud-train-ebmgn8v"]))
def test_blank_keys_refused(blank: str, stack: str) -> None:
    assert _cluster_errors(stack, blank)


@SETTINGS
@given(st.sampled_from(["us-west-2", "eu-central-1", "ap-northeast-1"]))
def test_keys_of_another_region_refused(region: str) -> None:
    assert _cluster_errors("aws-train-p5", f"arn:aws:kms:{region}:{ACCOUNT}:key/{KEY_ID}")
    assert _cluster_errors("alicloud-train-ebmgn8v", f"acs:kms:{region}:{ACCOUNT}:key/key-abc")


def test_a_key_of_another_account_than_the_stack_names_is_refused() -> None:
    profile = f"arn:aws:iam::{ACCOUNT}:instance-profile/gpu-nodes"
    (error,) = _cluster_errors("aws-train-p5", f"arn:aws:kms:us-east-1:{OTHER_ACCOUNT}:key/{KEY_ID}",
                               instance_profile_arn=profile)
    assert f"account {OTHER_ACCOUNT}, not the stack's ({ACCOUNT})" in error
    assert _cluster_errors("aws-train-p5", f"arn:aws:kms:us-east-1:{ACCOUNT}:key/{KEY_ID}",
                           instance_profile_arn=profile) == []
    replicas = {"us-west-2": f"arn:aws:kms:us-west-2:{OTHER_ACCOUNT}:key/{KEY_ID}"}
    assert _images_errors(kms_key=f"arn:aws:kms:us-east-1:{ACCOUNT}:key/{KEY_ID}", replica_kms_keys=replicas)


def test_customer_keys_pass() -> None:
    assert _cluster_errors("aws-train-p5", f"arn:aws:kms:us-east-1:{ACCOUNT}:key/{KEY_ID}") == []
    assert _cluster_errors("aws-train-p5", "alias/gpu-disks") == []
    key = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/{KEY_ID}"
    assert validate("aws-image-pipeline-cmk", DISTRIBUTION, _distribution(key)) == []
