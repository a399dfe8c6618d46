"""The scale-out gate command run on a new node against stub commands: it waits for the boot node check, admits
only a node that passes it now, and never outlives its wait."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from bootstrap_node import Node, config
from conftest import shellcheck

from components.bootstrap import BootstrapError, gate_command


def run_gate(node: Node, tmp_path: Path, wait_seconds: int = 60) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "gate.sh"
    script.write_text(gate_command(wait_seconds))
    env = {
        "PATH": f"{node.stubs}:/usr/bin:/bin",
        "STUB_LOG": str(node.log),
        "GPUFLEET_RUN": str(node.root / "run/gpufleet"),
        "GPUFLEET_ETC": str(node.root / "etc/gpufleet"),
    }
    return subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)


def mark(node: Node, name: str, text: str = "") -> None:
    run = node.root / "run/gpufleet"
    run.mkdir(parents=True, exist_ok=True)
    (run / name).write_text(text)


@pytest.mark.parametrize(("check_exit", "status"), [(0, 0), (1, 1), (2, 2)])
def test_passed_boot_check_is_checked_again_and_its_status_decides(tmp_path, check_exit, status):
    node = Node(tmp_path, config("alicloud"))
    mark(node, "healthy")
    node.stub("gpufleet-nodecheck", f"exit {check_exit}")
    result = run_gate(node, tmp_path)
    assert result.returncode == status, result.stderr
    assert node.calls() == [f"gpufleet-nodecheck --expect {node.root}/etc/gpufleet/expect.json --format text"]


def test_failed_boot_check_refuses_the_node_with_its_report(tmp_path):
    node = Node(tmp_path, config("alicloud"))
    mark(node, "unhealthy")
    mark(node, "nodecheck.json", '{"healthy": false}')
    result = run_gate(node, tmp_path)
    assert result.returncode == 1
    assert "the boot node check failed" in result.stderr and '{"healthy": false}' in result.stderr
    assert not [c for c in node.calls() if c.startswith("gpufleet-nodecheck")]


def test_gate_waits_for_the_boot_check_to_finish(tmp_path):
    node = Node(tmp_path, config("alicloud"))
    # The boot check finishes while the gate waits: the first poll's sleep writes its result.
    node.stub("sleep", f'touch "{node.root}/run/gpufleet/healthy"')
    (node.root / "run/gpufleet").mkdir(parents=True)
    result = run_gate(node, tmp_path)
    assert result.returncode == 0, result.stderr
    assert [c.split()[0] for c in node.calls()] == ["sleep", "gpufleet-nodecheck"]


def test_gate_gives_up_at_its_wait_and_the_node_is_refused(tmp_path):
    node = Node(tmp_path, config("alicloud"))
    node.stub("sleep", "exec /bin/sleep 0.2")
    result = run_gate(node, tmp_path, wait_seconds=1)
    assert result.returncode == 3
    assert "did not finish within 1 s" in result.stderr
    assert not [c for c in node.calls() if c.startswith("gpufleet-nodecheck")]


def test_gate_is_shellcheck_clean_and_free_of_runbook_placeholders(tmp_path):
    command = gate_command(720)
    assert command.startswith("#!/bin/bash\nGPUFLEET_GATE_SECONDS=720\n")
    # OOS fills {{ name }} and ESS ${name} in the template that carries the command: neither may occur in it.
    assert "{{" not in command and "${" not in command
    script = tmp_path / "gate.sh"
    script.write_text(command)
    result = subprocess.run([shellcheck(), "-s", "bash", str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize("wait", [0, -5, True, "720"])
def test_gate_wait_must_be_a_positive_integer(wait):
    with pytest.raises(BootstrapError, match="gate wait_seconds: must be an integer >= 1"):
        gate_command(wait)
