"""The policy pack served the way the Pulumi CLI runs it, over the analyzer protocol, gives the offline plan's verdicts.

Launch (pulumi/pulumi sdk/python/cmd/pulumi-language-python/main.go, RunPlugin, kind analyzer): the pack's
virtualenv interpreter runs `-u -m pulumi.policy <engine address> <pack directory>` with the pack directory
as working directory; pulumi/policy/__main__.py runs the directory's __main__.py with runpy, and
PolicyPack prints the port of its gRPC server on stdout (pulumi_policy/policy.py). The virtualenv holds
only what policies/requirements.txt installs (tests/pack_venv.py), not the project.
Calls (sdk/go/common/resource/plugin/analyzer_plugin.go and pkg/engine/update.go
LoadLocalPolicyPackAnalyzers): GetAnalyzerInfo, ConfigureStack, Configure with the pack config reconciled
as pkg/resource/analyzer/config.go ReconcilePolicyPackConfig does, Analyze per resource, AnalyzeStack.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import selectors
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import jsonschema
import pytest
from conftest import SHIPPED_STACKS
from google.protobuf import empty_pb2, json_format, struct_pb2
from pack_venv import POLICIES, build_pack_venv
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc
from pulumi_policy import StackValidationPolicy
from test_depth import DEEP

from gpufleet.pack_config.derive import policy_pack_config
from gpufleet.pack_config.settings import resolve_config
from gpufleet.plan.planner import PROJECT, plan_stack
from gpufleet.plan.policy_runner import run_policies
from gpufleet.plan.record import RecordedResource
from gpufleet.prepare import prepare
from gpufleet.stackfile import load_stack, stack_names, stack_path
from gpufleet.yaml_model import read_yaml
from policies.registry import ALL_POLICIES

# The CLI passes its engine's gRPC address; pulumi.policy only parses it (the pack never dials the engine).
ENGINE_ADDRESS = "127.0.0.1:1"
LEVEL_NAMES = {value: name.lower() for name, value in analyzer_pb2.EnforcementLevel.items()}


@pytest.fixture(scope="module")
def analyzer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    python = build_pack_venv(tmp_path_factory.mktemp("pack") / ".venv")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["VIRTUAL_ENV"] = str(python.parent.parent)  # as the toolchain's ActivateVirtualEnv
    proc = subprocess.Popen(
        [str(python), "-u", "-m", "pulumi.policy", ENGINE_ADDRESS, str(POLICIES)],
        cwd=POLICIES, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        # epoll, not select(): a worker that ran other tests may hold file descriptors past select()'s 1024.
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ)
            ready = selector.select(timeout=300)  # importing the pack takes seconds; minutes on a loaded machine
        line = proc.stdout.readline().decode() if ready else ""
        if not line.strip().isdigit():
            proc.kill()
            _, err = proc.communicate(timeout=10)
            pytest.fail(f"the pack did not print its port (got {line!r}); stderr:\n{err.decode()[-4000:]}")
        channel = grpc.insecure_channel(f"127.0.0.1:{line.strip()}")
        grpc.channel_ready_future(channel).result(timeout=120)
        yield analyzer_pb2_grpc.AnalyzerStub(channel)
        channel.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def cli_policy_config(info: analyzer_pb2.AnalyzerInfo, pack_config: dict[str, Any]) -> dict[str, Any]:
    """The --policy-pack-config file as the CLI reconciles it (ReconcilePolicyPackConfig): each policy's level
    and schema defaults from GetAnalyzerInfo, then "all", then each entry (a level, or a map whose
    enforcementLevel is taken out of the properties); properties validated against each policy's schema."""
    result: dict[str, tuple[str, dict[str, Any]]] = {}
    for policy in info.policies:
        schema = json_format.MessageToDict(policy.configSchema.properties)
        defaults = {key: spec["default"] for key, spec in schema.items() if "default" in spec}
        result[policy.name] = (LEVEL_NAMES[policy.enforcementLevel], defaults)
    given: dict[str, tuple[str | None, dict[str, Any]]] = {}
    for name, value in copy.deepcopy(pack_config).items():
        if isinstance(value, str):
            given[name] = (value, {})
        else:
            given[name] = (value.pop("enforcementLevel", None), value)
    if given.get("all", (None,))[0]:
        result = {name: (given["all"][0], props) for name, (_, props) in result.items()}
    for name, (level, props) in given.items():
        old_level, old_props = result.get(name, (None, {}))
        result[name] = (level or old_level, {**old_props, **props})
    for policy in info.policies:
        schema = {"type": "object", "properties": json_format.MessageToDict(policy.configSchema.properties)}
        if policy.configSchema.required:
            schema["required"] = list(policy.configSchema.required)
        jsonschema.validate(result[policy.name][1], schema)
    return {name: {"enforcementLevel": level, "properties": props} for name, (level, props) in result.items()}


def configure(
    stub: analyzer_pb2_grpc.AnalyzerStub, stack: str, pack_config: dict[str, Any], sent: dict[str, str] | None = None
) -> dict[str, Any]:
    """As the CLI: ConfigureStack (with the stack's config where `sent` gives it), then Configure with the
    reconciled --policy-pack-config (`pack_config` {} is the CLI run without the file)."""
    info = stub.GetAnalyzerInfo(empty_pb2.Empty())
    stub.ConfigureStack(analyzer_pb2.AnalyzerStackConfigureRequest(
        stack=stack, project=PROJECT, dry_run=True, config=sent or {}))
    reconciled = cli_policy_config(info, pack_config)
    request = analyzer_pb2.ConfigureAnalyzerRequest()
    for name, entry in reconciled.items():
        request.policyConfig[name].enforcementLevel = analyzer_pb2.EnforcementLevel.Value(
            entry["enforcementLevel"].upper()
        )
        request.policyConfig[name].properties.update(entry["properties"])
    stub.Configure(request)
    return reconciled


def _struct(values: dict[str, Any]) -> struct_pb2.Struct:
    # Engine-marked secrets and unknowns are already in the wire form (the 4dabf18193072939515e22adb298388d
    # signature object, the unknown sentinel string) the CLI marshals with KeepSecrets and KeepUnknowns.
    return json_format.ParseDict(values, struct_pb2.Struct())


def _options(resource: RecordedResource) -> analyzer_pb2.AnalyzerResourceOptions:
    return analyzer_pb2.AnalyzerResourceOptions(
        protect=resource.protect, ignoreChanges=list(resource.ignore_changes), parent=resource.parent or "",
        customTimeouts=analyzer_pb2.AnalyzerResourceOptions.CustomTimeouts(),
    )


def root_stack_urn(stack: str) -> str:
    """resource.DefaultRootStackURN: where the CLI files a stack policy's violation that names no resource."""
    return f"urn:pulumi:{stack}::{PROJECT}::pulumi:pulumi:Stack::{PROJECT}-{stack}"


Attributed = list[tuple[str, analyzer_pb2.AnalyzeDiagnostic]]


def analyze(stub: analyzer_pb2_grpc.AnalyzerStub, stack: str, resources: list[RecordedResource]) -> Attributed:
    """Analyze for each resource, then AnalyzeStack over all; each diagnostic with the URN the CLI files it under
    (pkg/resource/deploy/analyze_snapshot.go: a resource's own URN for Analyze; for AnalyzeStack the
    diagnostic's URN when it names a resource of the stack, else the root stack's, resolveStackPolicyViolationURN).
    The offline runner evaluates the recorded inputs in both, so the stack call sends them too (the CLI sends
    each resource's outputs there, once its step has run)."""
    found: Attributed = []
    for r in resources:
        response = stub.Analyze(analyzer_pb2.AnalyzeRequest(
            urn=r.urn, type=r.type, name=r.name, properties=_struct(r.inputs), options=_options(r),
        ))
        found += [(r.urn, d) for d in response.diagnostics]
    response = stub.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=[
        analyzer_pb2.AnalyzerResource(
            urn=r.urn, type=r.type, name=r.name, properties=_struct(r.inputs), options=_options(r),
            parent=r.parent or "", dependencies=list(r.depends_on),
            propertyDependencies={
                key: analyzer_pb2.AnalyzerPropertyDependencies(urns=list(urns))
                for key, urns in r.property_dependencies.items() if urns
            },
        )
        for r in resources
    ]))
    in_stack = {r.urn for r in resources}
    found += [(d.urn if d.urn in in_stack else root_stack_urn(stack), d) for d in response.diagnostics]
    return found


def verdicts(found: Attributed) -> list[tuple[str, str, str, str]]:
    """Each diagnostic as (policy, level, urn, message); the SDK prefixes the rule's message with its description."""
    descriptions = {policy.name: policy.description for policy in ALL_POLICIES}
    rows = []
    for urn, d in found:
        assert d.policyPackName == "gpufleet"
        message = d.message.removeprefix(descriptions[d.policyName]).removeprefix("\n")
        rows.append((d.policyName, LEVEL_NAMES[d.enforcementLevel], urn, message))
    return sorted(rows)


def offline(stack: str, violations: list[dict[str, str]]) -> list[tuple[str, str, str, str]]:
    """The plan's violations; a stack rule's violation that names no resource has urn "" in the plan."""
    return sorted((v["policy"], v["level"], v["urn"] or root_stack_urn(stack), v["message"]) for v in violations)


def stack_pack_config(stack: str) -> dict[str, Any]:
    """What `gpufleet policy-config --stack STACK` prints for `pulumi up --policy-pack-config`."""
    config = load_stack(stack_path(SHIPPED_STACKS, stack), SHIPPED_STACKS)
    return policy_pack_config(config, prepare(config), stack)


# Every shipped stack in both runs at depth (make test-deep). Before every commit six stacks, each sent once: half
# with the config file, half without, each half one stack per cloud, and one Kubernetes stack in all. The protocol
# path is the same for each stack and the offline verdicts of every stack are tested without the pack process: the
# others prove only breadth, kept for depth. (A Kubernetes stack cost the pack ~11 CPU-s before it called only the
# rules of each resource's type and read each resource once per call; under 1 now.)
WITH_CONFIG_FILE = stack_names(SHIPPED_STACKS) if DEEP else [
    "aws-train-p5", "azure-infer-aks", "alicloud-train-ebmgn8v",
]
WITHOUT_CONFIG_FILE = stack_names(SHIPPED_STACKS) if DEEP else [
    "aws-infer-g6e", "azure-train-ndh100", "alicloud-infer-gn7i",
]


@pytest.mark.parametrize("stack", WITH_CONFIG_FILE)
def test_shipped_plan_gets_the_offline_verdicts_over_the_analyzer_protocol(analyzer, shipped_plans, stack) -> None:
    plan = shipped_plans[stack]
    pack_config = stack_pack_config(stack)
    reconciled = configure(analyzer, stack, pack_config)
    # The CLI's reconciliation and the offline runner's resolve_config agree on every policy's level and settings.
    settings = resolve_config(ALL_POLICIES, pack_config)
    assert {n: (e["enforcementLevel"], e["properties"]) for n, e in reconciled.items() if n != "all"} == {
        n: (s.level, s.properties) for n, s in settings.items()
    }
    assert verdicts(analyze(analyzer, stack, plan.resources)) == offline(stack, plan.policies["violations"])


def test_crafted_plan_with_mandatory_resource_and_stack_violations_gets_the_same_verdicts(analyzer, shipped_plans):
    """aws-train-p5 made unsafe (an unencrypted launch template volume, a wildcard IAM action) under a config
    that its plan breaks (required tag, instance types, a 1 USD/h budget): resource and stack rules, both
    levels, numbers in the config (the wire turns them into floats) and in the inputs."""
    stack = "aws-train-p5"
    unsafe = []
    for resource in shipped_plans[stack].resources:
        inputs = copy.deepcopy(resource.inputs)
        if resource.type == "aws:ec2/launchTemplate:LaunchTemplate":
            inputs["blockDeviceMappings"][0]["ebs"] = {"volumeSize": 200, "volumeType": "gp3"}
        elif resource.type == "aws:iam/rolePolicy:RolePolicy":
            inputs["policy"] = json.dumps({
                "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
            })
        unsafe.append(dataclasses.replace(resource, inputs=inputs))
    pack_config = stack_pack_config(stack)
    pack_config["required-tags"] = {"keys": ["owner"]}
    pack_config["allowed-instance-types"] = {"types": ["g6e.xlarge"]}
    pack_config["hourly-budget"]["maxHourlyUsd"] = 1
    pack_config["aws-spot-allocation-strategy"] = "mandatory"
    expected = run_policies(unsafe, pack_config)
    assert {(v.policy, v.level) for v in expected.violations} >= {
        ("aws-block-device-cmk-encryption", "mandatory"), ("aws-iam-no-wildcard-actions", "mandatory"),
        ("required-tags", "mandatory"), ("allowed-instance-types", "mandatory"), ("hourly-budget", "mandatory"),
        ("aws-image-unbaked", "advisory"),
    }
    configure(analyzer, stack, pack_config)
    assert verdicts(analyze(analyzer, stack, unsafe)) == offline(stack, [v.to_json() for v in expected.violations])


def test_pack_info_lists_every_rule_at_its_level(analyzer) -> None:
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    assert info.name == "gpufleet" and info.supportsConfig
    served = {p.name: LEVEL_NAMES[p.enforcementLevel] for p in info.policies}
    assert served == {p.name: p.enforcement_level.value for p in ALL_POLICIES}
    assert {p.name for p in info.policies if p.policy_type == analyzer_pb2.POLICY_TYPE_STACK} == {
        p.name for p in ALL_POLICIES if isinstance(p, StackValidationPolicy)
    }


def sent_config(path: Path) -> dict[str, str]:
    """The stack file's config as the CLI sends it in ConfigureStack (pkg/engine/update.go: target.Config decrypted;
    an object value as its JSON text, e.g. gpufleet:cluster)."""
    config = read_yaml(path)["config"]
    return {key: value if isinstance(value, str) else json.dumps(value) for key, value in config.items()}


@pytest.mark.parametrize("stack", WITHOUT_CONFIG_FILE)
def test_pack_run_without_a_config_file_gets_the_offline_verdicts(analyzer, shipped_plans, stack) -> None:
    plan = shipped_plans[stack]
    configure(analyzer, stack, {}, sent_config(stack_path(SHIPPED_STACKS, stack)))
    assert verdicts(analyze(analyzer, stack, plan.resources)) == offline(stack, plan.policies["violations"])


@pytest.mark.parametrize("cluster", [
    "{extends: aws-train-p5, budget: {max_hourly_usd: 100}}",
    "{extends: aws-infer-g6e, node_groups: [{name: l40s, instance_types: [g5.48xlarge, g6e.48xlarge], "
    "size: {min: 0, desired: 1, max: 4}}], budget: {max_hourly_usd: 100}}",
])
def test_pack_run_without_a_config_file_applies_the_stacks_budget(analyzer, stacks_dir: Path, cluster: str) -> None:
    """Run as README's command runs it (no --policy-pack-config): the budget the stack sets still binds."""
    stack = "crafted"
    path = stacks_dir / f"Pulumi.{stack}.yaml"
    path.write_text(f"config:\n  aws:region: us-east-1\n  gpufleet:cluster: {cluster}\n")
    plan = plan_stack(path, stacks_dir)
    assert plan.exit_code == 1 and "hourly-budget" in {v["policy"] for v in plan.policies["violations"]}
    configure(analyzer, stack, {}, sent_config(path))
    assert verdicts(analyze(analyzer, stack, plan.resources)) == offline(stack, plan.policies["violations"])


def test_a_config_file_cannot_loosen_what_the_pack_derives(analyzer) -> None:
    stack = "aws-train-p5"
    loose = stack_pack_config(stack)
    loose["hourly-budget"]["maxHourlyUsd"] = 1.0e12
    with pytest.raises(grpc.RpcError, match="a stack may only lower it"):
        configure(analyzer, stack, loose, sent_config(stack_path(SHIPPED_STACKS, stack)))
