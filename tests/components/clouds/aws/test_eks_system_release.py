"""The EKS system group's AMI release is pinned: `gpufleet lock resolve` reads it from EKS's public SSM parameter
(moto's SSM answers the real boto3 client), records it in images/lock.resolved.yaml, and the managed node group
takes it as releaseVersion; unread, the plan names the fact and a real run refuses. The release below is a test value
in the parameter's shape, not a fact about AWS."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pulumi
import pytest
from aws_public_parameters import publish
from conftest import SHIPPED_STACKS, one
from moto import mock_aws
from resolved_facts import write_beside

from components import runtime
from components.clouds.aws.eks_steps import refuse_unread_release
from gpufleet.lock import DEFAULT_LOCK_PATH, loader
from gpufleet.lock.facts import ResolvedFacts
from gpufleet.lock.needs import eks_release_key, eks_release_need
from gpufleet.lock_resolve import resolve
from gpufleet.plan.planner import plan_stack
from gpufleet.sources.aws import default_ssm_client, ssm_release_version
from gpufleet.sources.http import SourceError
from gpufleet.stackfile import stack_path

NOW = datetime(2026, 11, 20, tzinfo=timezone.utc)
PARAMETER = "/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/x86_64/standard/recommended/release_version"
RELEASE = "1.35.0-20261115"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
FIELD = "scheduler.system_group (the EKS managed node group's releaseVersion)"


def _plan():
    return plan_stack(stack_path(SHIPPED_STACKS, "aws-train-eks"), SHIPPED_STACKS)


def test_the_need_reads_the_recommended_release_parameter_of_the_minor() -> None:
    need = eks_release_need("1.35", "us-east-1")
    assert need.parameter == PARAMETER and need.key == eks_release_key("1.35") and need.fields == (FIELD,)


def test_unread_the_plan_names_the_fact_and_pins_nothing() -> None:
    plan = _plan()
    assert "releaseVersion" not in one(plan, NODE_GROUP).inputs
    (finding,) = [f for f in plan.summary["unresolved_facts"] if f["field"] == FIELD]
    assert finding["status"] == "unresolved" and "`gpufleet lock resolve --only addons`" in finding["message"]


def test_unread_a_real_run_refuses_and_a_preview_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime, "running_offline", lambda: True)  # as under the offline engine
    refuse_unread_release("1.35", "us-east-1")  # offline: the plan goes on
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    monkeypatch.setattr(pulumi.runtime, "is_dry_run", lambda: False)
    with pytest.raises(pulumi.RunError) as refused:
        refuse_unread_release("1.35", "us-east-1")
    assert PARAMETER in str(refused.value) and "nothing was created" in str(refused.value)


def test_resolved_from_ssm_the_group_takes_the_release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with mock_aws():
        publish(PARAMETER, "1.35.0-20261001", "us-east-1", NOW)
        publish(PARAMETER, RELEASE, "us-east-1", NOW)  # the newest version of the parameter is what GetParameter reads
        run = resolve([eks_release_need("1.35", "us-east-1")], ResolvedFacts(), NOW)
    assert run.failed == {}
    fact = run.facts.managed[eks_release_key("1.35")]
    assert fact.version == RELEASE and fact.source == f"ssm:GetParameter Name={PARAMETER} (us-east-1)"
    lock = tmp_path / "lock.yaml"
    lock.write_text(DEFAULT_LOCK_PATH.read_text())
    monkeypatch.setattr(loader.load_lock, "__defaults__", (lock,))
    write_beside(lock, run.facts)
    plan = _plan()
    assert one(plan, NODE_GROUP).inputs["releaseVersion"] == RELEASE
    assert not [f for f in plan.summary.get("unresolved_facts", []) if f["field"] == FIELD]


def test_a_missing_or_malformed_parameter_is_a_clear_error() -> None:
    with mock_aws():
        ssm = default_ssm_client("us-east-1")
        with pytest.raises(SourceError, match="EKS publishes none for this Kubernetes minor there"):
            ssm_release_version(ssm, PARAMETER)
        publish(PARAMETER, "ami-0123456789abcdef0", "us-east-1", NOW)
        with pytest.raises(SourceError, match=r"holds 'ami-0123456789abcdef0', not a release"):
            ssm_release_version(ssm, PARAMETER)
