"""Image stacks: each cloud's `gpufleet:images` model and the checks of its values against the cloud's naming,
the catalog and the image lock, through the CLI: exit 2 naming the field, nothing planned."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import libyaml_files
import pytest
from conftest import of_type, one
from image_stacks import images_stack, refused
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.clouds.lookup import backend
from gpufleet.clouds.registry import CLOUDS
from gpufleet.plan.planner import plan_stack

UNKNOWN = "unknown field; check its spelling against `gpufleet schema --images`"
KEY = "arn:aws:kms:us-east-1:111122223333:key/mrk-1234abcd12ab34cd56ef1234567890ab"
REPLICA = "arn:aws:kms:us-west-2:111122223333:key/mrk-1234abcd12ab34cd56ef1234567890ab"


@pytest.mark.parametrize(
    ("cloud", "field", "value"),
    [
        ("aws", "build_vm_size", "Standard_D8s_v5"),
        ("azure", "kms_key", "https://vault.vault.azure.net/keys/k/1"),
        ("azure", "build_instance_types", ["Standard_D8s_v5"]),
        ("alicloud", "kms_key", "key-0123456789abcdef01234567"),
        ("alicloud", "service_linked_roles", "exists"),
    ],
)
def test_a_field_of_another_cloud_is_refused_by_name(tmp_path: Path, cloud: str, field: str, value: Any) -> None:
    assert f"{field}: {UNKNOWN}" in refused(images_stack(tmp_path, cloud, **{field: value}))


@pytest.mark.parametrize(
    ("cloud", "region", "expected"),
    [
        ("aws", "US-West-2", "an AWS region name"),
        ("azure", "south-central-us", "an Azure region name (lower-case letters and digits, e.g. eastus)"),
        ("alicloud", "cn_beijing", "an Alibaba Cloud region id (e.g. cn-wulanchabu)"),
    ],
)
def test_a_region_the_cloud_does_not_name_so_is_refused(tmp_path: Path, cloud: str, region: str,
                                                         expected: str) -> None:
    path = images_stack(tmp_path, cloud)
    build = libyaml_files.load(path.read_text())["config"]["gpufleet:images"]["regions"][0]
    output = refused(images_stack(tmp_path, cloud, regions=[build, region]))
    assert f"regions[1]: '{region}' is not {expected}" in output
    assert "has no" not in output  # no advice to add a misspelt region to the lock


@pytest.mark.parametrize("cloud", CLOUDS)
def test_a_region_listed_twice_is_refused(tmp_path: Path, cloud: str) -> None:
    regions = libyaml_files.load(images_stack(tmp_path, cloud).read_text())["config"]["gpufleet:images"]["regions"]
    output = refused(images_stack(tmp_path, cloud, regions=[*regions, regions[0]]))
    assert f"regions[{len(regions)}]: '{regions[0]}' is listed twice; list each region once" in output


@pytest.mark.parametrize(
    ("cloud", "field", "value", "path", "name"),
    [
        ("aws", "build_instance_types", ["g5.2xlarge", "m9.huge"], "build_instance_types[1]", "m9.huge"),
        ("azure", "build_vm_size", "Standard_D8s_v9", "build_vm_size", "Standard_D8s_v9"),
        ("alicloud", "build_instance_type", "ecs.g9.2xlarge", "build_instance_type", "ecs.g9.2xlarge"),
    ],
)
def test_a_build_type_missing_from_the_catalog_is_refused(tmp_path: Path, cloud: str, field: str, value: Any,
                                                          path: str, name: str) -> None:
    output = refused(images_stack(tmp_path, cloud, **{field: value}))
    assert f"{path}: unknown build type '{name}' for {cloud}; use one of: " in output
    assert f"gpufleet/catalog/data/{cloud}.yaml" in output


@pytest.mark.parametrize("cloud", CLOUDS)
def test_an_unknown_profile_is_refused(tmp_path: Path, cloud: str) -> None:
    output = refused(images_stack(tmp_path, cloud, profile="cuda99-r1"))
    assert ("profile: unknown image profile 'cuda99-r1'; images/lock.yaml has: cuda12.8-r570-ack, cuda12.8-r580, "
            "cuda12.8-r580-eks1.35, cuda13.0-r580") in output


@pytest.mark.parametrize("cloud", CLOUDS)
def test_a_profile_ack_installs_is_refused(tmp_path: Path, cloud: str) -> None:
    output = refused(images_stack(tmp_path, cloud, profile="cuda12.8-r570-ack"))
    assert ("profile: profile 'cuda12.8-r570-ack' is installed_by: ack: ACK installs its driver on ACK's own node "
            "image, so there is nothing to bake; name a profile gpufleet bakes: cuda12.8-r580, cuda12.8-r580-eks1.35, "
            "cuda13.0-r580") in output


@pytest.mark.parametrize(("cloud", "region"), [("aws", "ap-south-1"), ("azure", "westus3"),
                                               ("alicloud", "cn-hangzhou")])
def test_a_region_the_profile_does_not_list_is_refused(tmp_path: Path, cloud: str, region: str) -> None:
    build = libyaml_files.load(images_stack(tmp_path, cloud).read_text())["config"]["gpufleet:images"]["regions"][0]
    output = refused(images_stack(tmp_path, cloud, regions=[build, region]))
    assert f"regions[1]: profile 'cuda12.8-r580' has no {cloud} entry for {region} in images/lock.yaml" in output
    assert f"add `{region}: {{id: null, status: unbaked}}` under profiles.cuda12.8-r580.images.{cloud} first" in output


@pytest.mark.parametrize(("cloud", "other"), [("aws", "us-west-2"), ("azure", "southcentralus"),
                                              ("alicloud", "cn-beijing")])
def test_a_provider_region_other_than_the_build_region_is_refused(tmp_path: Path, cloud: str, other: str) -> None:
    output = refused(images_stack(tmp_path, cloud, provider_region=other))
    build = libyaml_files.load(images_stack(tmp_path, cloud).read_text())["config"]["gpufleet:images"]["regions"][0]
    key = backend(cloud).region_key
    assert f"{key}: is '{other}' but gpufleet:images.regions[0] is '{build}'; set both to the same region" in output


def test_tags_within_the_clouds_limits(tmp_path: Path) -> None:
    output = refused(images_stack(tmp_path, "aws", tags={"aws:team": "ml", "team": "x" * 257}))
    assert "tags.aws:team: keys starting with 'aws:' are reserved by aws; rename it" in output
    assert "tags.team: the value is 257 characters; aws allows 256" in output


def test_a_tag_that_is_not_text_is_refused(tmp_path: Path) -> None:
    output = refused(images_stack(tmp_path, "azure", tags={"cost-center": 4410}))
    assert "tags: 'cost-center': 4410 is not text (YAML 1.2 read a int); quote it" in output


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"kms_key": "1234abcd-12ab-34cd-56ef-1234567890ab"},
         "kms_key: '1234abcd-12ab-34cd-56ef-1234567890ab' is not a KMS key ARN"),
        ({"kms_key": "alias/images", "replica_kms_keys": {"us-west-2": REPLICA}},
         "kms_key: 'alias/images' is not a KMS key ARN"),
        ({"kms_key": REPLICA, "replica_kms_keys": {"us-west-2": REPLICA}},
         f"kms_key: '{REPLICA}' is a key in us-west-2; a KMS key is regional, give one in us-east-1"),
        ({"kms_key": KEY},
         "replica_kms_keys: a brought kms_key needs the key of us-west-2 too (a KMS key is regional)"),
        ({"kms_key": KEY, "replica_kms_keys": {"us-west-2": KEY}},
         f"replica_kms_keys: us-west-2: '{KEY}' is a key in us-east-1"),
        ({"kms_key": KEY, "replica_kms_keys": {"us-west-2": REPLICA, "eu-west-1": REPLICA}},
         "replica_kms_keys: eu-west-1: not one of the other regions ['us-west-2']"),
        ({"replica_kms_keys": {"us-west-2": REPLICA}},
         "replica_kms_keys: only with a brought kms_key; a created key is replicated to every region"),
    ],
)
def test_aws_image_keys_are_key_arns_of_each_region(tmp_path: Path, changes: dict[str, Any], message: str) -> None:
    assert message in refused(images_stack(tmp_path, "aws", **changes))


def test_aws_brought_keys_encrypt_each_regions_ami(tmp_path: Path) -> None:
    alias = "arn:aws:kms:us-west-2:111122223333:alias/gpufleet-images"
    plan = plan_stack(images_stack(tmp_path, "aws", kms_key=KEY, replica_kms_keys={"us-west-2": alias}), None)
    assert plan.exit_code == 0, plan.policies["violations"]
    assert not of_type(plan, "aws:kms/key:Key") and not of_type(plan, "aws:kms/replicaKey:ReplicaKey")
    recipe = one(plan, "aws:imagebuilder/imageRecipe:ImageRecipe")
    assert recipe.inputs["blockDeviceMappings"][0]["ebs"]["kmsKeyId"] == KEY
    distribution = one(plan, "aws:imagebuilder/distributionConfiguration:DistributionConfiguration")
    keys = {d["region"]: d["amiDistributionConfiguration"]["kmsKeyId"] for d in distribution.inputs["distributions"]}
    assert keys == {"us-east-1": KEY, "us-west-2": alias}


# Where each pipeline takes its build machine: resource type, then the path to the input.
BUILD_INPUT = {
    "aws": ("aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration", ("instanceTypes",)),
    "azure": ("azure-native:virtualmachineimages:VirtualMachineImageTemplate", ("vmProfile", "vmSize")),
    "alicloud": ("alicloud:ecs/ecsImagePipeline:EcsImagePipeline", ("instanceType",)),
}


@pytest.mark.parametrize(
    ("cloud", "field", "value"),
    [
        ("aws", "build_instance_types", ["g5.xlarge", "g5.2xlarge"]),
        ("azure", "build_vm_size", "Standard_NC24ads_A100_v4"),
        ("alicloud", "build_instance_type", "ecs.gn7i-c8g1.2xlarge"),
    ],
)
def test_the_build_type_reaches_the_pipeline(tmp_path: Path, cloud: str, field: str, value: Any) -> None:
    typ, path = BUILD_INPUT[cloud]
    pipelines = of_type(plan_stack(images_stack(tmp_path, cloud, **{field: value}), None), typ)
    assert len(pipelines) == (2 if cloud == "alicloud" else 1)  # Alibaba: one per boot mode
    for pipeline in pipelines:
        found: Any = pipeline.inputs
        for key in path:
            found = found[key]
        assert found == value


def test_the_images_schema_has_each_clouds_own_settings() -> None:
    result = CliRunner().invoke(app, ["schema", "--images"])
    assert result.exit_code == 0, result.output
    schema = json.loads(result.stdout)
    assert schema["title"] == "gpufleet:images" and schema["required"] == ["cloud"]
    fields = {rule["if"]["properties"]["cloud"]["const"]: set(schema["$defs"][rule["then"]["$ref"].rsplit("/", 1)[1]]
                                                               ["properties"])
              for rule in schema["allOf"] if "properties" in rule["if"]}
    assert fields["aws"] >= {"build_instance_types", "kms_key", "replica_kms_keys"}
    assert "build_vm_size" in fields["azure"] and "kms_key" not in fields["azure"]
    assert "build_instance_type" in fields["alicloud"] and "kms_key" not in fields["alicloud"]
    cluster = json.loads(CliRunner().invoke(app, ["schema"]).stdout)
    assert cluster["title"] == "gpufleet:cluster"
