"""The policy pack over recorded plans of the shipped stacks, and over the same plans made unsafe."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

from conftest import SHIPPED_STACKS, shipped_plan, write_stack
from slurm_stacks import slurm_cluster

from gpufleet.pack_config.derive import policy_pack_config
from gpufleet.plan.planner import plan_stack
from gpufleet.plan.policy_runner import run_policies
from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile import load_stack


def recorded(stack: str):
    path = SHIPPED_STACKS / f"Pulumi.{stack}.yaml"
    config = load_stack(path, SHIPPED_STACKS)
    cluster = resolve_cluster(config["gpufleet:cluster"])
    return shipped_plan(stack).resources, policy_pack_config(config, cluster, stack)


def test_unencrypted_launch_template_volume_fails_mandatory() -> None:
    resources, config = recorded("aws-train-p5")
    unsafe = []
    for resource in resources:
        if resource.type == "aws:ec2/launchTemplate:LaunchTemplate":
            inputs = copy.deepcopy(resource.inputs)
            inputs["blockDeviceMappings"][0]["ebs"] = {"volumeSize": 200, "volumeType": "gp3"}
            resource = dataclasses.replace(resource, inputs=inputs)
        unsafe.append(resource)
    report = run_policies(unsafe, config)
    assert report.has_mandatory
    assert {v.policy for v in report.violations if v.level == "mandatory"} == {"aws-block-device-cmk-encryption"}


def test_wildcard_iam_action_fails_mandatory() -> None:
    resources, config = recorded("aws-infer-g6e")
    unsafe = [
        dataclasses.replace(r, inputs={**r.inputs, "policy": '{"Version": "2012-10-17", "Statement": '
                                       '[{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}'})
        if r.type == "aws:iam/rolePolicy:RolePolicy" else r
        for r in resources
    ]
    report = run_policies(unsafe, config)
    assert "aws-iam-no-wildcard-actions" in {v.policy for v in report.violations if v.level == "mandatory"}


def test_required_tag_missing_fails_when_configured() -> None:
    resources, config = recorded("aws-train-p5")
    report = run_policies(resources, {**config, "required-tags": {"keys": ["owner"]}})
    assert report.has_mandatory
    assert {v.policy for v in report.violations if v.level == "mandatory"} == {"required-tags"}
    report = run_policies(resources, {**config, "required-tags": {"keys": ["team", "cost-center"]}})
    assert not report.has_mandatory


SLURM_RULES = {"aws-slurm-munge-key-in-secret-store", "aws-slurmctld-not-public", "aws-slurm-partition-one-fabric"}


def test_the_planned_slurm_head_node_passes_the_slurm_rules_and_a_public_one_fails(tmp_path: Path) -> None:
    path = write_stack(tmp_path, "slurm-p5", slurm_cluster("aws-train-p5"))
    config = load_stack(path, tmp_path)
    settings = policy_pack_config(config, resolve_cluster(config["gpufleet:cluster"]), "slurm-p5")
    resources = plan_stack(path, tmp_path).resources
    heads = [r for r in resources if r.type == "aws:ec2/instance:Instance" and r.name.endswith("-slurm-head")]
    assert len(heads) == 1
    assert not [v for v in run_policies(resources, settings).violations if v.policy in SLURM_RULES]
    public = [dataclasses.replace(r, inputs={**r.inputs, "associatePublicIpAddress": True}) if r in heads else r
              for r in resources]
    assert "aws-slurmctld-not-public" in {v.policy for v in run_policies(public, settings).violations}
