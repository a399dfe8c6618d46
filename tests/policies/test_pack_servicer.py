"""The pack's servicer (policies/stack_settings.DerivingServicer) calls, for each resource, only the rules that read
its type: the SDK's Analyze turns the properties into Python once per rule it calls. The verdicts it gives over the
analyzer protocol are tested in tests/gpufleet/plan/test_policies_pack_analyzer.py."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format, struct_pb2
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, StackValidationPolicy

from policies.registry import ALL_POLICIES, RULES
from policies.stack_settings import DerivingServicer

CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"


@pytest.fixture
def called(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the rules the SDK calls, in order, each still running its own check."""
    names: list[str] = []
    for policy in ALL_POLICIES:
        def validate(args: Any, report: Any, name: str = policy.name, check: Any = policy.validate) -> Any:
            names.append(name)
            return check(args, report)

        monkeypatch.setattr(policy, "validate", validate)
    return names


def servicer() -> DerivingServicer:
    return DerivingServicer("gpufleet", "0.0.1", ALL_POLICIES, EnforcementLevel.MANDATORY)


def resource(kind: str, props: dict[str, Any]) -> dict[str, Any]:
    return {"urn": f"urn:pulumi:dev::gpufleet::{kind}::r", "type": kind, "name": "r",
            "properties": json_format.ParseDict(props, struct_pb2.Struct())}


@pytest.mark.parametrize("kind", [CRD, LAUNCH_TEMPLATE, "aws:s3/bucketV2:BucketV2"])
def test_analyze_calls_only_the_rules_that_read_the_resources_type(called: list[str], kind: str) -> None:
    response = servicer().Analyze(analyzer_pb2.AnalyzeRequest(**resource(kind, {"metadata": {"name": "x"}})), None)
    readers = [rule.name for rule in RULES if rule.kind == "resource" and kind in rule.resource_types]
    assert called == readers
    assert {d.policyName for d in response.diagnostics} <= set(readers)


def test_a_launch_template_is_still_judged_by_its_rules(called: list[str]) -> None:
    unencrypted = {"blockDeviceMappings": [{"deviceName": "/dev/sda1", "ebs": {"volumeSize": 200}}]}
    response = servicer().Analyze(analyzer_pb2.AnalyzeRequest(**resource(LAUNCH_TEMPLATE, unencrypted)), None)
    assert "aws-block-device-cmk-encryption" in {d.policyName for d in response.diagnostics}


def test_analyze_stack_still_calls_every_stack_rule(called: list[str]) -> None:
    request = analyzer_pb2.AnalyzeStackRequest(resources=[
        analyzer_pb2.AnalyzerResource(**resource(CRD, {"metadata": {"name": "x"}}))])
    servicer().AnalyzeStack(request, None)
    assert called == [p.name for p in ALL_POLICIES if isinstance(p, StackValidationPolicy)]
    assert not any(isinstance(p, ResourceValidationPolicy) and p.name in called for p in ALL_POLICIES)
