"""The offline engine on a small program of real pulumi_aws resources."""

from __future__ import annotations

from typing import Any

import libyaml_files
import pulumi
import pulumi_aws as aws
import pytest
from conftest import REPO

from gpufleet.plan.engine import DuplicateUrn, run_program
from gpufleet.plan.mock_dispatch import UnansweredInvoke
from gpufleet.plan.record import RecordedResource


class Pair(pulumi.ComponentResource):
    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:test:Pair", name, None, opts)
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


def test_each_resource_keeps_its_own_inputs_when_registrations_overlap() -> None:
    # The SDK registers from several executor threads at once; each recording must be its own request's inputs.
    def many() -> None:
        for i in range(60):
            aws.sns.Topic(f"t{i}", display_name=f"t{i}", tags={"n": str(i)})

    recorded = run(many)
    assert len(recorded) == 60
    assert all(r.inputs == {"displayName": r.name, "tags": {"n": r.name[1:]}} for r in recorded)


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


class Outer(pulumi.ComponentResource):
    def __init__(self, name: str) -> None:
        super().__init__("gpufleet:test:Outer", name, None, None)
        self.pair = Pair(f"{name}-pair", opts=pulumi.ResourceOptions(parent=self))
        self.register_outputs({})


def test_urns_qualify_with_the_whole_parent_chain_and_leave_the_stack_out() -> None:
    found = by_name(run(lambda: Outer("top")))
    assert found["top"].urn == "urn:pulumi:t::gpufleet::gpufleet:test:Outer::top"
    assert found["top"].parent == "urn:pulumi:t::gpufleet::pulumi:pulumi:Stack::gpufleet-t"
    assert found["top-pair"].urn == "urn:pulumi:t::gpufleet::gpufleet:test:Outer$gpufleet:test:Pair::top-pair"
    assert found["top-pair-key"].urn == (
        "urn:pulumi:t::gpufleet::gpufleet:test:Outer$gpufleet:test:Pair$aws:kms/key:Key::top-pair-key")
    assert found["top-pair-key"].parent == found["top-pair"].urn


def test_duplicate_urn_is_refused_as_the_engine_does() -> None:
    def prog() -> None:
        aws.sns.Topic("alerts")
        aws.sns.Topic("alerts")

    with pytest.raises(DuplicateUrn, match=r"^Duplicate resource URN "
                       r"'urn:pulumi:t::gpufleet::aws:sns/topic:Topic::alerts'; try giving it a unique name$"):
        run(prog)


def test_one_name_under_two_parents_is_two_urns() -> None:
    def prog() -> None:
        Pair("a")
        aws.kms.Key("a-key")

    keys = [r for r in run(prog) if r.name == "a-key"]
    assert len({k.urn for k in keys}) == 2


def test_duplicate_urn_exits_2_from_gpufleet_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from gpufleet import cli
    from gpufleet.plan import planner

    def twice(prepared: object = None) -> None:
        Pair("train")
        Pair("train")

    monkeypatch.setattr(planner, "build", twice)
    result = CliRunner().invoke(cli.app, ["plan", "--stack", "aws-infer-g6e"])
    assert result.exit_code == 2
    message = " ".join(result.output.split())  # the console wraps long lines
    assert "Duplicate resource URN 'urn:pulumi:aws-infer-g6e::gpufleet::gpufleet:test:Pair::train'" in message
    assert "Traceback" not in result.output


def test_plan_json_carries_protect_ignore_changes_and_property_dependencies() -> None:
    def prog() -> None:
        key = aws.kms.Key("k", opts=pulumi.ResourceOptions(protect=True, ignore_changes=["description"]))
        aws.kms.Alias("k", name="alias/k", target_key_id=key.key_id)

    found = {r.type: r.to_json() for r in run(prog)}
    key, alias = found["aws:kms/key:Key"], found["aws:kms/alias:Alias"]
    assert (key["protect"], key["ignore_changes"]) == (True, ["description"])
    assert (alias["protect"], alias["ignore_changes"]) == (False, [])
    assert alias["property_dependencies"] == {"targetKeyId": [key["urn"]]}


def expected_urn(stack: str, resource: RecordedResource, by_urn: dict[str, RecordedResource]) -> str:
    """The engine's URN computed from the recorded parent chain: every ancestor's type, stack left out."""
    types, node = [resource.type], resource
    while node.parent in by_urn:
        node = by_urn[node.parent]
        types.insert(0, node.type)
    assert node.parent == stack_urn(stack), f"{resource.name}: chain ends at {node.parent}"
    return f"urn:pulumi:{stack}::gpufleet::{'$'.join(types)}::{resource.name}"


def stack_urn(stack: str) -> str:
    return f"urn:pulumi:{stack}::gpufleet::pulumi:pulumi:Stack::gpufleet-{stack}"


def test_shipped_stacks_record_the_engines_urns(shipped_plans) -> None:
    assert {"aws-train-p5", "aws-infer-g6e", "aws-images"} <= set(shipped_plans)
    for stack, plan in shipped_plans.items():
        by_urn = {r.urn: r for r in plan.resources}
        assert len(by_urn) == len(plan.resources), stack
        for resource in plan.resources:
            assert resource.urn == expected_urn(stack, resource, by_urn)


def test_shipped_stacks_edges_resolve_to_recorded_resources(shipped_plans) -> None:
    for stack, plan in shipped_plans.items():
        known = {r.urn for r in plan.resources} | {stack_urn(stack)}
        for resource in plan.resources:
            edges = {resource.parent, *resource.depends_on,
                     *(urn for urns in resource.property_dependencies.values() for urn in urns)}
            assert edges <= known, (stack, resource.name, edges - known)
            assert set(resource.property_dependencies) <= set(resource.inputs), (stack, resource.name)


def test_plan_tree_nests_every_resource_under_its_parent(shipped_plans) -> None:
    from rich.console import Console

    from gpufleet.report.tables import resource_tree

    for stack, plan in shipped_plans.items():
        console = Console(width=400, record=True, color_system=None)
        console.print(resource_tree(plan))
        lines = console.export_text().splitlines()[1:]
        by_urn = {r.urn: r for r in plan.resources}
        depth_of: dict[str, int] = {}
        for line in lines:
            label = line.lstrip("│├└─ ")
            depth_of[label] = (len(line) - len(label)) // 4
        assert len(depth_of) == len(plan.resources), stack
        for resource in plan.resources:
            chain, node = 1, resource
            while node.parent in by_urn:
                node, chain = by_urn[node.parent], chain + 1
            assert depth_of[f"{resource.type} {resource.name}"] == chain, (stack, resource.name)


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
    from gpufleet.program import build

    resources = run_program(build, {"gpufleet:template": "aws-infer-g6e", "gpufleet:cloud": "aws",
                                    "gpufleet:region": "us-east-1", "aws:region": "us-east-1"},
                            project="gpufleet", stack="new", region="us-east-1", zones=["us-east-1a"])
    templates = [r for r in resources if r.type == "aws:ec2/launchTemplate:LaunchTemplate"]
    assert [t.inputs["instanceType"] for t in templates] == ["g6e.48xlarge"]


def test_pulumi_yaml_template_prompts() -> None:
    project = libyaml_files.load((REPO / "Pulumi.yaml").read_text())
    assert project["name"] == "gpufleet" and project["stackConfigDir"] == "stacks"
    assert project["runtime"]["options"]["virtualenv"] == ".venv"
    assert {"gpufleet:template", "gpufleet:cloud", "gpufleet:region"} <= set(project["template"]["config"])


def test_aliases_are_dropped_offline_and_urns_stay(monkeypatch: pytest.MonkeyPatch) -> None:
    # azure-native declares an alias per API version; offline there is no state for them to map.
    import pulumi_azure_native as azure

    from gpufleet.plan.engine import RecordingMonitor

    sent: dict[str, int] = {}
    register = RecordingMonitor.RegisterResource

    def spy(self: RecordingMonitor, request: object) -> object:
        sent[request.type] = len(request.aliases)
        return register(self, request)

    monkeypatch.setattr(RecordingMonitor, "RegisterResource", spy)

    def program() -> None:
        azure.network.VirtualNetwork("v", resource_group_name="rg", location="eastus")

    [vnet] = run_program(program, {}, project="gpufleet", stack="s", region="eastus", zones=[])
    assert sent["azure-native:network:VirtualNetwork"] == 0
    assert vnet.urn == "urn:pulumi:s::gpufleet::azure-native:network:VirtualNetwork::v"


def test_the_program_runs_on_a_thread_of_its_own_and_its_error_reaches_the_caller() -> None:
    """The SDK walks the whole stack per resource: the program's stack starts at its own thread, not the caller's."""
    import threading
    import traceback

    seen: dict[str, object] = {}

    def failing() -> None:
        seen["thread"] = threading.current_thread()
        seen["frames"] = [frame.name for frame in traceback.extract_stack()]
        Pair("demo")
        raise KeyError("from the program")

    with pytest.raises(KeyError, match="from the program"):
        run(failing)
    assert seen["thread"] is not threading.current_thread()
    assert test_the_program_runs_on_a_thread_of_its_own_and_its_error_reaches_the_caller.__name__ not in seen["frames"]


def test_runs_share_one_pool_of_registration_threads() -> None:
    """The SDK hands each registration to its loop's default thread pool. A pool per run left its threads idle and
    alive after the run (one or more per plan, thousands in a test worker); one pool serves every run, so the
    threads the runs leave are at most one default-sized pool's, however many runs there are."""
    import os
    import threading

    def one_key() -> None:
        aws.kms.Key("k")

    before = set(threading.enumerate())
    one_pool = min(32, (os.cpu_count() or 1) + 4)  # ThreadPoolExecutor's default size, which the loop's pool takes
    for _ in range(one_pool + 1):
        run(one_key)
    assert len(set(threading.enumerate()) - before) <= one_pool


def _count_in_a_forked_child(results: Any) -> None:
    results.put(len(run()))


def test_a_process_forked_after_a_run_runs_its_own() -> None:
    """The pool a forked child inherits counts the parent's threads as idle, yet none of them exists in the child:
    handed its registrations, a run there would wait for ever. The child makes a pool of its own."""
    import multiprocessing

    run()
    fork = multiprocessing.get_context("fork")
    results = fork.Queue()
    child = fork.Process(target=_count_in_a_forked_child, args=(results,))
    child.start()
    child.join(60)
    hung = child.is_alive()
    if hung:
        child.kill()
    assert not hung, "a run in a child forked after a run never finished"
    assert child.exitcode == 0 and results.get(timeout=5) == 4  # the Pair component and its three resources
