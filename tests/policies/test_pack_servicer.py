"""The pack's servicer (policies/stack_settings.DerivingServicer) calls, for each resource, only the rules that read
its type, and reads each resource's properties once per call (policies/read_once.py): the SDK's Analyze and
AnalyzeStack turn them into Python again for every rule they call. Its verdicts are the SDK servicer's own; those it
gives over the analyzer protocol are tested in tests/gpufleet/plan/test_policies_pack_analyzer.py."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from conftest import shipped_plan
from google.protobuf import json_format, struct_pb2
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, StackValidationPolicy
from pulumi_policy import policy as sdk

from policies.read_once import reading_once
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


def unsafe_p5() -> list[analyzer_pb2.AnalyzerResource]:
    """aws-train-p5's resources with an unencrypted launch template volume: resource and stack rules report."""
    resources = []
    for r in shipped_plan("aws-train-p5").resources:
        inputs = copy.deepcopy(r.inputs)
        if r.type == LAUNCH_TEMPLATE:
            inputs["blockDeviceMappings"][0]["ebs"] = {"volumeSize": 200, "volumeType": "gp3"}
        resources.append(analyzer_pb2.AnalyzerResource(
            urn=r.urn, type=r.type, name=r.name, parent=r.parent or "", dependencies=list(r.depends_on),
            properties=json_format.ParseDict(inputs, struct_pb2.Struct())))
    return resources


def outcome(response: analyzer_pb2.AnalyzeResponse) -> tuple[list[Any], list[Any]]:
    return (sorted((d.policyName, d.urn, d.message, d.enforcementLevel) for d in response.diagnostics),
            sorted((n.policy_name, n.reason) for n in response.not_applicable))


def test_the_packs_verdicts_are_the_sdk_servicers_own() -> None:
    resources = unsafe_p5()
    own = sdk._PolicyAnalyzerServicer("gpufleet", "0.0.1", ALL_POLICIES, EnforcementLevel.MANDATORY)
    stack = analyzer_pb2.AnalyzeStackRequest(resources=resources)
    judged = outcome(own.AnalyzeStack(stack, None))
    assert judged[0] or judged[1], "the stack rules said nothing: the comparison would prove nothing"
    assert outcome(servicer().AnalyzeStack(stack, None)) == judged
    for r in resources:
        request = analyzer_pb2.AnalyzeRequest(urn=r.urn, type=r.type, name=r.name, properties=r.properties)
        assert outcome(servicer().Analyze(request, None)) == outcome(own.Analyze(request, None)), r.urn
    diagnosed = {d.policyName for r in resources for d in servicer().Analyze(
        analyzer_pb2.AnalyzeRequest(urn=r.urn, type=r.type, name=r.name, properties=r.properties), None).diagnostics}
    assert "aws-block-device-cmk-encryption" in diagnosed


def test_a_stack_call_reads_each_resource_once_and_every_rule_gets_the_same_props(
        monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[Any] = []
    monkeypatch.setattr(json_format, "MessageToDict", lambda m, *a, _made=json_format.MessageToDict, **k: (
        made.append(m), _made(m, *a, **k))[1])
    seen: list[list[Any]] = []
    for policy in ALL_POLICIES:
        if isinstance(policy, StackValidationPolicy):
            def validate(args: Any, report: Any, check: Any = policy.validate) -> Any:
                seen.append([r.props for r in args.resources])
                return check(args, report)

            monkeypatch.setattr(policy, "validate", validate)
    resources = unsafe_p5()
    servicer().AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=resources), None)
    assert len(seen) == len([p for p in ALL_POLICIES if isinstance(p, StackValidationPolicy)])
    assert len(made) <= len(resources), "a resource's properties were made into a dict more than once"
    assert all(a is b for props in seen[1:] for a, b in zip(props, seen[0], strict=True))


def test_outside_a_call_the_sdks_names_make_new_objects_each_time() -> None:
    message = json_format.ParseDict({"tags": {"a": "b"}}, struct_pb2.Struct())
    assert sdk.json_format.MessageToDict(message) is not sdk.json_format.MessageToDict(message)
    with reading_once():
        made = sdk.json_format.MessageToDict(message)
        assert sdk.json_format.MessageToDict(message) is made
        assert sdk.unknown_checking_proxy(sdk.deserialize_properties(made)) is sdk.unknown_checking_proxy(
            sdk.deserialize_properties(made))
    assert sdk.unknown_checking_proxy(made) is not sdk.unknown_checking_proxy(made)
    assert sdk.deserialize_properties(made) == {"tags": {"a": "b"}}
