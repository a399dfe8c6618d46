"""AwsImagePipeline under the offline engine: what it registers and what it refuses."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import libyaml_files
import pulumi_aws as aws
import pytest

from components.clouds.aws.image_pipeline import AwsImagePipeline, AwsImagePipelineArgs, _amis_by_region
from gpufleet.plan.engine import run_program
from gpufleet.plan.record import RecordedResource

AMI = "ami-0123456789abcdef0"
PARTS = ["mkdir -p /opt/gpufleet/bundle && printf %s 'aGVsbG8K' > /opt/gpufleet/bundle/000",
         "bash /opt/gpufleet/src/images/install/install.sh --nvswitch yes"]


def args(**changes: object) -> AwsImagePipelineArgs:
    base = dict(
        profile="cuda12.8-r570",
        parent_image=AMI,
        installer_parts=PARTS,
        regions=["us-east-1", "us-west-2", "eu-west-1"],
        instance_types=["g6.xlarge"],
        subnet_id="subnet-0123456789abcdef0",
        security_group_ids=["sg-0123456789abcdef0"],
        tags={"team": "ml"},
    )
    return AwsImagePipelineArgs(**{**base, **changes})


@dataclass
class Registered:
    """What one run of the component registered, under the project's offline engine."""

    resources: list[RecordedResource]

    def of_type(self, typ: str) -> list[RecordedResource]:
        return [r for r in self.resources if r.type == typ]

    def one(self, typ: str) -> RecordedResource:
        (found,) = self.of_type(typ)
        return found


def build(name: str, pipeline_args: AwsImagePipelineArgs) -> Registered:
    """Run the component in a fresh program under the offline engine and return what it registered."""

    def program() -> None:
        AwsImagePipeline(name, pipeline_args)

    return Registered(run_program(program, {}, project="gpufleet", stack="test", region="us-east-1", zones=[]))


def test_registers_the_pipeline_resources():
    plan = build("img", args())
    types = sorted(r.type for r in plan.resources)
    assert types == sorted(
        [
            "gpufleet:aws:ImagePipeline",
            "aws:kms/key:Key",
            "aws:kms/replicaKey:ReplicaKey",
            "aws:kms/replicaKey:ReplicaKey",
            "aws:imagebuilder/component:Component",
            "aws:imagebuilder/component:Component",
            "aws:imagebuilder/imageRecipe:ImageRecipe",
            "aws:iam/role:Role",
            "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
            "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
            "aws:iam/instanceProfile:InstanceProfile",
            "aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration",
            "aws:imagebuilder/distributionConfiguration:DistributionConfiguration",
            "aws:imagebuilder/imagePipeline:ImagePipeline",
            "aws:imagebuilder/image:Image",
        ]
    )
    assert all(r.name.startswith("img") for r in plan.resources)


def test_recipe_pins_the_parent_and_encrypts_root_with_the_key():
    plan = build("img-recipe", args())
    recipe = plan.one("aws:imagebuilder/imageRecipe:ImageRecipe")
    assert recipe.inputs["parentImage"] == AMI
    (mapping,) = recipe.inputs["blockDeviceMappings"]
    assert mapping["deviceName"] == "/dev/sda1"
    assert mapping["ebs"]["encrypted"] == "true"
    assert mapping["ebs"]["volumeType"] == "gp3"
    key = plan.one("aws:kms/key:Key")
    part, install = sorted(plan.of_type("aws:imagebuilder/component:Component"),
                           key=lambda c: c.name != "img-recipe-part0")
    assert recipe.property_dependencies["blockDeviceMappings"] == (key.urn,)
    assert sorted(recipe.property_dependencies["components"]) == sorted((part.urn, install.urn))
    # The bundle part runs before the installer: a component ARN carries the component's auto-name (its shape is the
    # mock tests' concern), so the order shows in which name each entry holds.
    first, second = recipe.inputs["components"]
    assert part.name in first["componentArn"] and install.name in second["componentArn"]


def test_created_key_rotates_and_waits_thirty_days():
    plan = build("img-key", args())
    key = plan.one("aws:kms/key:Key").inputs
    assert key["enableKeyRotation"] is True
    assert key["deletionWindowInDays"] == 30
    assert key["multiRegion"] is True
    replicas = {r.inputs["region"]: r for r in plan.of_type("aws:kms/replicaKey:ReplicaKey")}
    assert set(replicas) == {"us-west-2", "eu-west-1"}
    primary = plan.one("aws:kms/key:Key")
    for replica in replicas.values():
        assert replica.property_dependencies["primaryKeyArn"] == (primary.urn,)


def test_component_runs_the_installer():
    plan = build("img-doc", args())
    components = {c.name: c.inputs for c in plan.of_type("aws:imagebuilder/component:Component")}
    assert sorted(components) == ["img-doc-install", "img-doc-part0"]
    assert {c["platform"] for c in components.values()} == {"Linux"}
    part = libyaml_files.load(components["img-doc-part0"]["data"])
    assert [p["name"] for p in part["phases"]] == ["build"]
    assert part["phases"][0]["steps"][0]["inputs"]["commands"] == PARTS[:1]
    document = libyaml_files.load(components["img-doc-install"]["data"])
    build_phase = next(p for p in document["phases"] if p["name"] == "build")
    assert build_phase["steps"][0]["inputs"]["commands"] == PARTS[1:]
    assert [p["name"] for p in document["phases"]] == ["build", "validate", "test"]


def test_a_component_over_image_builders_16000_characters_is_refused():
    with pytest.raises(ValueError, match=r"installer_parts\[0\]: its component would be 16\d{3} characters"):
        args(installer_parts=["x" * 15_950, "true"])


def test_infrastructure_requires_imdsv2_and_terminates_on_failure():
    plan = build("img-infra", args())
    infra = plan.one("aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration").inputs
    assert infra["instanceMetadataOptions"] == {"httpTokens": "required", "httpPutResponseHopLimit": 2}
    assert infra["terminateInstanceOnFailure"] is True
    assert infra["instanceTypes"] == ["g6.xlarge"]


def test_one_distribution_per_region_with_that_regions_key():
    plan = build("img-dist", args())
    distributions = plan.one("aws:imagebuilder/distributionConfiguration:DistributionConfiguration").inputs[
        "distributions"
    ]
    assert [d["region"] for d in distributions] == ["us-east-1", "us-west-2", "eu-west-1"]
    key_ids = set()
    for d in distributions:
        ami = d["amiDistributionConfiguration"]
        assert ami["name"] == "gpufleet-cuda12.8-r570-{{ imagebuilder:buildDate }}"
        # Each region's AMI under that region's replica of one multi-Region key.
        region, key_id = re.fullmatch(r"arn:aws:kms:([a-z0-9-]+):123456789012:key/(mrk-[0-9a-f]{32})",
                                      ami["kmsKeyId"]).groups()
        assert region == d["region"]
        key_ids.add(key_id)
    assert len(key_ids) == 1
    keys = {r.urn for r in plan.resources if r.type.startswith("aws:kms/")}
    distribution = plan.one("aws:imagebuilder/distributionConfiguration:DistributionConfiguration")
    assert set(distribution.property_dependencies["distributions"]) == keys


def test_pipeline_runs_image_tests():
    plan = build("img-pipe", args())
    pipeline = plan.one("aws:imagebuilder/imagePipeline:ImagePipeline").inputs
    assert pipeline["imageTestsConfiguration"] == {"imageTestsEnabled": True}
    recipe = plan.one("aws:imagebuilder/imageRecipe:ImageRecipe")
    assert plan.one("aws:imagebuilder/imagePipeline:ImagePipeline").property_dependencies["imageRecipeArn"] == (
        recipe.urn,)
    arn = "arn:aws:imagebuilder:us-east-1:123456789012"
    assert re.fullmatch(rf"{arn}:image-recipe/img-pipe-recipe-[0-9a-f]{{7}}/{re.escape(recipe.inputs['version'])}",
                        pipeline["imageRecipeArn"])
    assert re.fullmatch(rf"{arn}:infrastructure-configuration/img-pipe-infrastructure-[0-9a-f]{{7}}",
                        pipeline["infrastructureConfigurationArn"])
    assert re.fullmatch(rf"{arn}:distribution-configuration/img-pipe-distribution-[0-9a-f]{{7}}",
                        pipeline["distributionConfigurationArn"])


def test_iam_is_two_managed_policies_and_no_wildcard_action():
    plan = build("img-iam", args())
    attached = sorted(
        r.inputs["policyArn"] for r in plan.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    )
    assert attached == [
        "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
        "arn:aws:iam::aws:policy/EC2InstanceProfileForImageBuilder",
    ]
    policies = [
        json.loads(r.inputs[key])
        for r in plan.resources
        if r.type.startswith("aws:iam/")
        for key in ("assumeRolePolicy", "policy")
        if isinstance(r.inputs.get(key), str)
    ]
    assert policies, "the role's trust policy was not recorded"
    for policy in policies:
        for statement in policy["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            assert not [a for a in actions if "*" in a]
    role = plan.one("aws:iam/role:Role").inputs
    assert "inlinePolicies" not in role and "managedPolicyArns" not in role


def test_bring_your_own_keys_creates_no_key():
    plan = build(
        "img-byo",
        args(
            regions=["us-east-1", "us-west-2"],
            kms_key_arn="arn:aws:kms:us-east-1:1:key/mrk-1",
            replica_kms_key_arns={"us-west-2": "arn:aws:kms:us-west-2:1:key/mrk-1"},
        ),
    )
    assert not plan.of_type("aws:kms/key:Key") and not plan.of_type("aws:kms/replicaKey:ReplicaKey")
    distributions = plan.one("aws:imagebuilder/distributionConfiguration:DistributionConfiguration").inputs[
        "distributions"
    ]
    assert [d["amiDistributionConfiguration"]["kmsKeyId"] for d in distributions] == [
        "arn:aws:kms:us-east-1:1:key/mrk-1",
        "arn:aws:kms:us-west-2:1:key/mrk-1",
    ]


def test_children_are_parented_to_the_component_and_outputs_registered():
    plan = build("img-tree", args(regions=["us-east-1"]))
    component = plan.one("gpufleet:aws:ImagePipeline")
    children = [r for r in plan.resources if r is not component]
    # key, 2 components (a bundle part, the install), recipe, role, 2 attachments, profile, infrastructure,
    # distribution, pipeline, image
    assert len(children) == 12
    assert {c.parent for c in children} == {component.urn}
    assert all(c.name.startswith("img-tree-") for c in children)
    infra = plan.one("aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration")
    attachments = {c.urn for c in plan.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")}
    assert attachments <= set(infra.depends_on)
    assert component.registered_outputs == ("amis", "image_arn", "kms_key_arn", "pipeline_arn", "recipe_arn")
    assert plan.one("aws:kms/key:Key").inputs["multiRegion"] is False
    assert not plan.of_type("aws:kms/replicaKey:ReplicaKey")


@pytest.mark.parametrize(
    "image",
    [
        "resolve:ssm:/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64",
        "ssm:/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64",
        "latest",
        "ami-latest",
        "ami-00000000",
        "arn:aws:imagebuilder:us-east-1:aws:image/ubuntu-server-22-lts-x86/x.x.x",
        "arn:aws:imagebuilder:us-east-1:aws:image/ubuntu-server-22-lts-x86/2025.x.x",
    ],
)
def test_unpinned_parent_image_is_refused(image):
    with pytest.raises(ValueError, match=r"^parent_image: .* is not a pinnable parent image"):
        args(parent_image=image)


@pytest.mark.parametrize(
    "image",
    [
        "ssm:/aws/service/canonical/ubuntu/server/22.04/stable/current/amd64/hvm/ebs-gp2/ami-id",
        "arn:aws:imagebuilder:us-east-1:aws:image/ubuntu-server-22-lts-x86/2025.1.2",
        AMI,
    ],
)
def test_pinnable_parent_images_reach_the_recipe(image):
    plan = build("img-parent", args(parent_image=image))
    assert plan.one("aws:imagebuilder/imageRecipe:ImageRecipe").inputs["parentImage"] == image


def test_bake_builds_the_recipe_into_every_region():
    plan = build("img-bake", args())
    image = plan.one("aws:imagebuilder/image:Image")
    recipe = plan.one("aws:imagebuilder/imageRecipe:ImageRecipe")
    distribution = plan.one("aws:imagebuilder/distributionConfiguration:DistributionConfiguration")
    assert image.property_dependencies["imageRecipeArn"] == (recipe.urn,)
    assert image.property_dependencies["distributionConfigurationArn"] == (distribution.urn,)
    assert image.inputs["imageTestsConfiguration"] == {"imageTestsEnabled": True}
    assert image.inputs["region"] == "us-east-1"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"regions": []}, "regions: needs at least one region"),
        ({"regions": ["us-east-1", "us-east-1"]}, "regions: .* lists a region twice"),
        ({"regions": ["US East"]}, "regions: 'US East' is not an AWS region name"),
        ({"profile": "bad profile"}, "profile: 'bad profile'"),
        ({"installer_parts": [" "]}, "installer_parts: must be one or more non-empty shell commands"),
        ({"instance_types": []}, "instance_types: needs at least one"),
        ({"security_group_ids": None}, "security_group_ids: required when subnet_id is set"),
        ({"subnet_id": None}, "subnet_id: give a brought subnet or build_network to create one"),
        ({"kms_key_arn": "arn:aws:kms:us-east-1:1:key/k"}, "replica_kms_key_arns: .*us-west-2, eu-west-1"),
        ({"replica_kms_key_arns": {"us-west-2": "k"}}, "replica_kms_key_arns: only with kms_key_arn"),
    ],
)
def test_bad_args_name_the_field(changes, message):
    with pytest.raises(ValueError, match=message):
        args(**changes)


def test_amis_output_maps_each_region_to_its_ami():
    """The Image's output resources, in the provider's own output types, become region -> AMI id."""
    ami = aws.imagebuilder.outputs.ImageOutputResourceAmi
    resources = [aws.imagebuilder.outputs.ImageOutputResource(amis=[
        ami(region="us-east-1", image="ami-0123456789abcdef0", account_id="123456789012"),
        ami(region="us-west-2", image="ami-0fedcba9876543210", account_id="123456789012"),
    ])]
    assert _amis_by_region(resources) == {"us-east-1": "ami-0123456789abcdef0", "us-west-2": "ami-0fedcba9876543210"}
    assert _amis_by_region(None) == {}  # not built yet: no id is made up
