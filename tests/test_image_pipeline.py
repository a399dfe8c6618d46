"""AwsImagePipeline under Pulumi mocks: what it registers and what it refuses."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pulumi
import pytest
import yaml
from pulumi.runtime.mocks import MockMonitor

from components.clouds.aws.image_pipeline import AwsImagePipeline, AwsImagePipelineArgs

AMI = "ami-0123456789abcdef0"
INSTALLER = "#!/bin/bash\nset -euo pipefail\napt-get install -y nvidia-driver-570-server\n"


@dataclass
class Registered:
    typ: str
    name: str
    inputs: dict


@dataclass
class RecordingMocks(pulumi.runtime.Mocks):
    """Records every new_resource call; answers with the inputs plus an ARN made from the name."""

    resources: list[Registered] = field(default_factory=list)
    monitor: RecordingMonitor | None = None

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        self.resources.append(Registered(args.typ, args.name, dict(args.inputs)))
        region = args.inputs.get("region", "us-east-1")
        return f"{args.name}-id", {
            **args.inputs,
            "arn": f"arn:aws:test:{region}:123456789012:{args.name}",
            "name": args.inputs.get("name", args.name),
        }

    def call(self, args: pulumi.runtime.MockCallArgs):
        if args.token == "aws:index/getCallerIdentity:getCallerIdentity":
            return {"accountId": "123456789012", "arn": "arn:aws:iam::123456789012:root", "userId": "123456789012"}
        return {}

    def of_type(self, typ: str) -> list[Registered]:
        return [r for r in self.resources if r.typ == typ]

    def one(self, typ: str) -> Registered:
        (found,) = self.of_type(typ)
        return found


def args(**changes: object) -> AwsImagePipelineArgs:
    base = dict(
        profile="cuda12.8-r570",
        parent_image=AMI,
        installer_script=INSTALLER,
        regions=["us-east-1", "us-west-2", "eu-west-1"],
        instance_types=["g6.xlarge"],
        tags={"team": "ml"},
    )
    return AwsImagePipelineArgs(**{**base, **changes})


class RecordingMonitor(MockMonitor):
    """Also records each registration's parent and dependencies, and register_outputs calls."""

    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        super().__init__(mocks)
        self.registered: list[dict] = []
        self.outputs: dict[str, list[str]] = {}

    def RegisterResource(self, request):
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            self.registered.append(
                {
                    "urn": response.urn,
                    "type": request.type,
                    "name": request.name,
                    "parent": request.parent,
                    "dependencies": list(request.dependencies),
                }
            )
        return response

    def RegisterResourceOutputs(self, request):
        self.outputs[request.urn] = sorted(request.outputs.fields.keys())
        return super().RegisterResourceOutputs(request)

    def one_urn(self, typ: str) -> str:
        (urn,) = [r["urn"] for r in self.registered if r["type"] == typ]
        return urn


def build(name: str, pipeline_args: AwsImagePipelineArgs) -> RecordingMocks:
    """Run the component in a fresh mocked program and return what it registered."""
    mocks = RecordingMocks()
    mocks.monitor = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, preview=False, monitor=mocks.monitor)

    @pulumi.runtime.test
    def program():
        component = AwsImagePipeline(name, pipeline_args)
        return pulumi.Output.all(component.pipeline_arn, component.recipe_arn, component.kms_key_arn)

    program()
    return mocks


def test_registers_the_pipeline_resources():
    mocks = build("img", args())
    types = sorted(r.typ for r in mocks.resources)
    assert types == sorted(
        [
            "gpufleet:aws:ImagePipeline",
            "aws:iam/serviceLinkedRole:ServiceLinkedRole",
            "aws:iam/serviceLinkedRole:ServiceLinkedRole",
            "aws:kms/key:Key",
            "aws:kms/replicaKey:ReplicaKey",
            "aws:kms/replicaKey:ReplicaKey",
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
    assert all(r.name.startswith("img") for r in mocks.resources)


def test_recipe_pins_the_parent_and_encrypts_root_with_the_key():
    mocks = build("img-recipe", args())
    recipe = mocks.one("aws:imagebuilder/imageRecipe:ImageRecipe").inputs
    assert recipe["parentImage"] == AMI
    (mapping,) = recipe["blockDeviceMappings"]
    assert mapping["deviceName"] == "/dev/sda1"
    assert mapping["ebs"]["encrypted"] == "true"
    assert mapping["ebs"]["volumeType"] == "gp3"
    assert mapping["ebs"]["kmsKeyId"] == "arn:aws:test:us-east-1:123456789012:img-recipe-key"
    assert recipe["components"] == [
        {"componentArn": "arn:aws:test:us-east-1:123456789012:img-recipe-install"}
    ]


def test_created_key_rotates_and_waits_thirty_days():
    mocks = build("img-key", args())
    key = mocks.one("aws:kms/key:Key").inputs
    assert key["enableKeyRotation"] is True
    assert key["deletionWindowInDays"] == 30
    assert key["multiRegion"] is True
    replicas = {r.inputs["region"]: r.inputs for r in mocks.of_type("aws:kms/replicaKey:ReplicaKey")}
    assert set(replicas) == {"us-west-2", "eu-west-1"}
    assert {r["primaryKeyArn"] for r in replicas.values()} == {
        "arn:aws:test:us-east-1:123456789012:img-key-key"
    }


def test_component_runs_the_installer():
    mocks = build("img-doc", args())
    component = mocks.one("aws:imagebuilder/component:Component").inputs
    assert component["platform"] == "Linux"
    document = yaml.safe_load(component["data"])
    build_phase = next(p for p in document["phases"] if p["name"] == "build")
    assert build_phase["steps"][0]["inputs"]["commands"] == [INSTALLER]
    assert [p["name"] for p in document["phases"]] == ["build", "validate", "test"]


def test_infrastructure_requires_imdsv2_and_terminates_on_failure():
    mocks = build("img-infra", args())
    infra = mocks.one("aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration").inputs
    assert infra["instanceMetadataOptions"] == {"httpTokens": "required", "httpPutResponseHopLimit": 2}
    assert infra["terminateInstanceOnFailure"] is True
    assert infra["instanceTypes"] == ["g6.xlarge"]


def test_one_distribution_per_region_with_that_regions_key():
    mocks = build("img-dist", args())
    distributions = mocks.one("aws:imagebuilder/distributionConfiguration:DistributionConfiguration").inputs[
        "distributions"
    ]
    assert [d["region"] for d in distributions] == ["us-east-1", "us-west-2", "eu-west-1"]
    for d in distributions:
        ami = d["amiDistributionConfiguration"]
        assert ami["name"] == "gpufleet-cuda12.8-r570-{{ imagebuilder:buildDate }}"
        suffix = "img-dist-key" if d["region"] == "us-east-1" else f"img-dist-key-{d['region']}"
        assert ami["kmsKeyId"] == f"arn:aws:test:{d['region']}:123456789012:{suffix}"


def test_pipeline_runs_image_tests():
    mocks = build("img-pipe", args())
    pipeline = mocks.one("aws:imagebuilder/imagePipeline:ImagePipeline").inputs
    assert pipeline["imageTestsConfiguration"] == {"imageTestsEnabled": True}
    assert pipeline["imageRecipeArn"] == "arn:aws:test:us-east-1:123456789012:img-pipe-recipe"


def test_iam_is_two_managed_policies_and_no_wildcard_action():
    mocks = build("img-iam", args())
    attached = sorted(
        r.inputs["policyArn"] for r in mocks.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    )
    assert attached == [
        "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
        "arn:aws:iam::aws:policy/EC2InstanceProfileForImageBuilder",
    ]
    policies = [
        json.loads(r.inputs[key])
        for r in mocks.resources
        if r.typ.startswith("aws:iam/")
        for key in ("assumeRolePolicy", "policy")
        if isinstance(r.inputs.get(key), str)
    ]
    assert policies, "the role's trust policy was not recorded"
    for policy in policies:
        for statement in policy["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            assert not [a for a in actions if "*" in a]
    role = mocks.one("aws:iam/role:Role").inputs
    assert "inlinePolicies" not in role and "managedPolicyArns" not in role


def test_bring_your_own_keys_creates_no_key():
    mocks = build(
        "img-byo",
        args(
            regions=["us-east-1", "us-west-2"],
            kms_key_arn="arn:aws:kms:us-east-1:1:key/mrk-1",
            replica_kms_key_arns={"us-west-2": "arn:aws:kms:us-west-2:1:key/mrk-1"},
        ),
    )
    assert not mocks.of_type("aws:kms/key:Key") and not mocks.of_type("aws:kms/replicaKey:ReplicaKey")
    distributions = mocks.one("aws:imagebuilder/distributionConfiguration:DistributionConfiguration").inputs[
        "distributions"
    ]
    assert [d["amiDistributionConfiguration"]["kmsKeyId"] for d in distributions] == [
        "arn:aws:kms:us-east-1:1:key/mrk-1",
        "arn:aws:kms:us-west-2:1:key/mrk-1",
    ]


def test_children_are_parented_to_the_component_and_outputs_registered():
    mocks = build("img-tree", args(regions=["us-east-1"]))
    component = mocks.monitor.one_urn("gpufleet:aws:ImagePipeline")
    children = [r for r in mocks.monitor.registered if r["type"] != "gpufleet:aws:ImagePipeline"]
    # 2 service-linked roles, key, component, recipe, role, 2 attachments, profile, infrastructure,
    # distribution, pipeline, image
    assert len(children) == 13
    assert {c["parent"] for c in children} == {component}
    assert all(c["name"].startswith("img-tree-") for c in children)
    infra = next(c for c in children if c["type"].endswith("InfrastructureConfiguration"))
    attachments = {c["urn"] for c in children if c["type"].endswith("RolePolicyAttachment")}
    assert attachments <= set(infra["dependencies"])
    assert mocks.monitor.outputs == {component: ["amis", "image_arn", "kms_key_arn", "pipeline_arn", "recipe_arn"]}
    assert mocks.one("aws:kms/key:Key").inputs["multiRegion"] is False
    assert not mocks.of_type("aws:kms/replicaKey:ReplicaKey")


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
    mocks = build("img-parent", args(parent_image=image))
    assert mocks.one("aws:imagebuilder/imageRecipe:ImageRecipe").inputs["parentImage"] == image


def test_bake_builds_the_recipe_into_every_region():
    mocks = build("img-bake", args())
    image = mocks.one("aws:imagebuilder/image:Image").inputs
    recipe = mocks.one("aws:imagebuilder/imageRecipe:ImageRecipe")
    distribution = mocks.one("aws:imagebuilder/distributionConfiguration:DistributionConfiguration")
    assert image["imageRecipeArn"] == f"arn:aws:test:us-east-1:123456789012:{recipe.name}"
    assert image["distributionConfigurationArn"] == f"arn:aws:test:us-east-1:123456789012:{distribution.name}"
    assert image["imageTestsConfiguration"] == {"imageTestsEnabled": True}
    assert image["region"] == "us-east-1"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"regions": []}, "regions: needs at least one region"),
        ({"regions": ["us-east-1", "us-east-1"]}, "regions: .* lists a region twice"),
        ({"regions": ["US East"]}, "regions: 'US East' is not an AWS region name"),
        ({"profile": "bad profile"}, "profile: 'bad profile'"),
        ({"installer_script": " "}, "installer_script: must be a non-empty shell script"),
        ({"instance_types": []}, "instance_types: needs at least one"),
        ({"subnet_id": "subnet-1"}, "security_group_ids: required when subnet_id is set"),
        ({"kms_key_arn": "arn:aws:kms:us-east-1:1:key/k"}, "replica_kms_key_arns: .*us-west-2, eu-west-1"),
        ({"replica_kms_key_arns": {"us-west-2": "k"}}, "replica_kms_key_arns: only with kms_key_arn"),
    ],
)
def test_bad_args_name_the_field(changes, message):
    with pytest.raises(ValueError, match=message):
        args(**changes)


@dataclass
class BakedMocks(RecordingMocks):
    """Answers the Image with output resources in the provider's shape, one AMI per distribution region."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        physical, outputs = super().new_resource(args)
        if args.typ == "aws:imagebuilder/image:Image":
            outputs["outputResources"] = [{"amis": [
                {"region": "us-east-1", "image": "ami-0123456789abcdef0", "accountId": "123456789012"},
                {"region": "us-west-2", "image": "ami-0fedcba9876543210", "accountId": "123456789012"},
            ]}]
        return physical, outputs


def test_amis_output_maps_each_region_to_its_ami():
    mocks = BakedMocks()
    pulumi.runtime.set_mocks(mocks, preview=False)
    found: dict = {}

    @pulumi.runtime.test
    def program():
        component = AwsImagePipeline("img-amis", args(regions=["us-east-1", "us-west-2"]))
        return component.amis.apply(found.update)

    program()
    assert found == {"us-east-1": "ami-0123456789abcdef0", "us-west-2": "ami-0fedcba9876543210"}
