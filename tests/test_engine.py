"""The offline engine on a small program of real pulumi_aws resources."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pytest

from components.plan.engine import run_program
from components.plan.mocks import UnansweredInvoke


class Pair(pulumi.ComponentResource):
    def __init__(self, name: str) -> None:
        super().__init__("gpufleet:test:Pair", name, None, None)
        child = pulumi.ResourceOptions(parent=self)
        self.key = aws.kms.Key(f"{name}-key", enable_key_rotation=True, deletion_window_in_days=30, opts=child)
        self.template = aws.ec2.LaunchTemplate(
            f"{name}-lt",
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(http_tokens="required"),
            block_device_mappings=[aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                device_name="/dev/sda1",
                ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(encrypted="true", kms_key_id=self.key.arn),
            )],
            opts=child,
        )
        self.sg = aws.ec2.SecurityGroup(f"{name}-sg", description="x",
                                        opts=pulumi.ResourceOptions(parent=self, depends_on=[self.template]))
        self.register_outputs({})


def program() -> None:
    Pair("demo")


def run(prog=program):
    return run_program(prog, {"aws:region": "us-east-1"}, project="gpufleet", stack="t", region="us-east-1",
                       zones=["us-east-1a"])


def by_name(resources):
    return {r.name: r for r in resources}


def test_records_inputs_with_provider_names() -> None:
    found = by_name(run())
    assert found["demo-key"].inputs == {"enableKeyRotation": True, "deletionWindowInDays": 30}
    assert found["demo-key"].type == "aws:kms/key:Key"
    lt = found["demo-lt"].inputs
    assert lt["metadataOptions"] == {"httpTokens": "required"}
    ebs = lt["blockDeviceMappings"][0]["ebs"]
    assert ebs["encrypted"] == "true"
    assert ebs["kmsKeyId"].startswith("arn:aws:kms:us-east-1:123456789012:key/")


def test_parent_and_dependency_edges() -> None:
    found = by_name(run())
    component = found["demo"]
    assert component.type == "gpufleet:test:Pair" and not component.custom
    for child in ("demo-key", "demo-lt", "demo-sg"):
        assert found[child].parent == component.urn
    assert found["demo-key"].urn in found["demo-lt"].depends_on
    assert found["demo-lt"].urn in found["demo-sg"].depends_on
    assert found["demo-key"].depends_on == ()
    assert found["demo-lt"].property_dependencies["blockDeviceMappings"] == (found["demo-key"].urn,)


def test_urns_follow_pulumi_scheme() -> None:
    found = by_name(run())
    assert found["demo-key"].urn == "urn:pulumi:t::gpufleet::gpufleet:test:Pair$aws:kms/key:Key::demo-key"


def test_two_runs_are_identical() -> None:
    assert [r.to_json() for r in run()] == [r.to_json() for r in run()]


def test_invoke_answered_locally() -> None:
    seen = {}

    def prog() -> None:
        aws.get_caller_identity_output().account_id.apply(lambda a: seen.setdefault("account", a))
        aws.get_availability_zones_output().names.apply(lambda z: seen.setdefault("zones", z))

    run(prog)
    assert seen == {"account": "123456789012", "zones": ["us-east-1a"]}


def test_unanswered_invoke_fails_loudly() -> None:
    def prog() -> None:
        aws.ec2.get_vpc_output(default=True)

    with pytest.raises(Exception) as caught:
        run(prog)
    assert isinstance(caught.value, UnansweredInvoke) or "no local answer for invoke aws:ec2/getVpc" in str(
        caught.value)


def test_pulumi_new_template_stack_starts_from_named_stack() -> None:
    from components.program import build

    resources = run_program(build, {"gpufleet:template": "aws-infer-g6e", "gpufleet:cloud": "aws",
                                    "gpufleet:region": "us-east-1", "aws:region": "us-east-1"},
                            project="gpufleet", stack="new", region="us-east-1", zones=["us-east-1a"])
    templates = [r for r in resources if r.type == "aws:ec2/launchTemplate:LaunchTemplate"]
    assert [t.inputs["instanceType"] for t in templates] == ["g6e.48xlarge"]


def test_pulumi_yaml_template_prompts() -> None:
    from pathlib import Path

    import yaml

    project = yaml.safe_load((Path(__file__).resolve().parent.parent / "Pulumi.yaml").read_text())
    assert project["name"] == "gpufleet" and project["stackConfigDir"] == "stacks"
    assert project["runtime"]["options"]["virtualenv"] == ".venv"
    assert {"gpufleet:template", "gpufleet:cloud", "gpufleet:region"} <= set(project["template"]["config"])
