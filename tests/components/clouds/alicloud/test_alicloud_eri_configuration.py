"""An ERI group's scaling configuration sends security_group_ids beside network_interfaces (the only create the
alicloud provider makes: resource_alicloud_ess_scaling_configuration.go), which ESS's CreateScalingConfiguration
reference says fails. Unconfirmed on an account, so the plan says so (summary.warnings, the table) and a real run
logs the same words; groups without ERIs and ACK pools are not named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import pytest
from conftest import shipped_plan
from typer.testing import CliRunner

from components import runtime
from gpufleet.cli import app

CONFIGURATION = "alicloud:ess/scalingConfiguration:ScalingConfiguration"


def unconfirmed(summary: dict[str, Any]) -> list[str]:
    return [w for w in summary.get("warnings", []) if "unconfirmed" in w]


def test_an_eri_groups_plan_names_the_unconfirmed_configuration() -> None:
    plan = shipped_plan("alicloud-train-ebmgn8v")
    (configuration,) = [r for r in plan.resources if r.type == CONFIGURATION]
    # The combination the warning is about, as registered.
    assert configuration.inputs["securityGroupIds"] and len(configuration.inputs["networkInterfaces"]) == 3
    (warning,) = unconfirmed(plan.summary)
    assert warning.startswith("node_groups[0].rdma: unconfirmed: the ERIs of group h20 need an ESS scaling")
    assert "security_group_ids beside network_interfaces" in warning and "CreateScalingConfiguration" in warning
    assert "rdma: off" in warning  # what to do if the create fails


@pytest.mark.parametrize("stack", ["alicloud-infer-gn7i", "alicloud-train-ack", "alicloud-infer-ack"])
def test_groups_without_a_scaling_configuration_with_eris_are_not_named(stack: str) -> None:
    plan = shipped_plan(stack)
    assert not any(r.type == CONFIGURATION and "networkInterfaces" in r.inputs for r in plan.resources)
    assert unconfirmed(plan.summary) == []


def test_the_table_shows_it(stacks_dir: Path) -> None:
    shown = CliRunner().invoke(app, ["plan", "--stack", "alicloud-train-ebmgn8v", "--stacks-dir", str(stacks_dir)])
    assert "node_groups[0].rdma: unconfirmed: the ERIs of group h20" in " ".join(shown.output.split())


def test_a_real_run_logs_the_same_words_and_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    logged: list[str] = []
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: logged.append(message))
    with runtime.recorded_warnings() as recorded:
        runtime.warn_unconfirmed("node_groups[0].rdma", "unconfirmed: words")
    assert logged == ["node_groups[0].rdma: unconfirmed: words"] and recorded == []
