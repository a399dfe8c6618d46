"""The scale-out gate command run on a new node against stub commands: it waits for the boot node check, admits
only a node that passes it now, and never outlives its wait."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from bootstrap_node import Node, config
from conftest import shellcheck

from components.bootstrap import BootstrapError, checkpoint_command, gate_command


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


# The scale-in checkpoint: what the scale-in hook's runbook runs on a leaving node.

HOOK = 'echo "hook ran" >> "$STUB_LOG"'


def checkpoint_env(node: Node) -> dict[str, str]:
    return {
        "PATH": f"{node.stubs}:/usr/bin:/bin",
        "STUB_LOG": str(node.log),
        "FAKE": str(node.fake),
        "GPUFLEET_RUN": str(node.root / "run/gpufleet"),
        "GPUFLEET_ETC": str(node.root / "etc/gpufleet"),
        "GPUFLEET_LIB": str(node.root / "usr/local/lib/gpufleet"),
    }


def run_checkpoint(node: Node, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "checkpoint.sh"
    script.write_text(checkpoint_command())
    return subprocess.run(["bash", str(script)], env=checkpoint_env(node), capture_output=True, text=True,
                          timeout=60)


def test_checkpoint_runs_the_stacks_hook_once(tmp_path):
    node = Node(tmp_path, config("alicloud", checkpoint_hook=HOOK))
    first, second = run_checkpoint(node, tmp_path), run_checkpoint(node, tmp_path)
    assert first.returncode == second.returncode == 0, first.stderr
    assert "running checkpoint hook" in first.stderr
    assert node.calls().count("hook ran") == 1  # the runbook retried: the checkpoint is not taken twice


def test_checkpoint_the_spot_watcher_took_is_not_taken_again(tmp_path):
    node = Node(tmp_path, config("alicloud", checkpoint_hook=HOOK))
    node.curl({"api/token": "tok-1", "/instance/spot/termination-time": "2025-01-01T00:05:00Z"})
    assert node.run("gpufleet-spot-watcher", "--once").returncode == 0
    assert run_checkpoint(node, tmp_path).returncode == 0
    assert node.calls().count("hook ran") == 1


def test_checkpoint_waits_for_the_one_the_spot_watcher_is_taking(tmp_path):
    """ESS removes a reclaimed spot node while its watcher still saves: the runbook returns only after the save."""
    hook = 'touch "$FAKE/started"; /bin/sleep 2; echo "hook finished" >> "$STUB_LOG"'
    node = Node(tmp_path, config("alicloud", checkpoint_hook=hook))
    node.curl({"api/token": "tok-1", "/instance/spot/termination-time": "2025-01-01T00:05:00Z"})
    watcher = subprocess.Popen(
        ["bash", str(node.root / "usr/local/sbin/gpufleet-spot-watcher"), "--once"], env=checkpoint_env(node),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        started = node.fake / "started"
        for _ in range(200):
            if started.exists():
                break
            subprocess.run(["/bin/sleep", "0.05"], check=True)
        assert started.exists()
        result = run_checkpoint(node, tmp_path)
        assert result.returncode == 0, result.stderr
        assert node.calls().count("hook finished") == 1  # already written when the runbook returns
    finally:
        assert watcher.wait(timeout=30) == 0


def test_checkpoint_is_bounded_by_the_stacks_grace_and_reports_the_hooks_failure(tmp_path):
    slow = Node(tmp_path / "slow", config("alicloud", checkpoint_hook="/bin/sleep 5", checkpoint_grace_seconds=1))
    result = run_checkpoint(slow, tmp_path)
    assert result.returncode == 124 and "checkpoint hook exited 124" in result.stderr
    failing = Node(tmp_path / "failing", config("alicloud", checkpoint_hook="exit 7"))
    assert run_checkpoint(failing, tmp_path).returncode == 7


def test_checkpoint_without_a_hook_or_a_bootstrap_only_says_so(tmp_path):
    node = Node(tmp_path, config("alicloud", checkpoint_hook=None))
    result = run_checkpoint(node, tmp_path)
    assert result.returncode == 0 and "no checkpoint hook configured" in result.stderr
    (node.root / "usr/local/lib/gpufleet/common.sh").unlink()
    result = run_checkpoint(node, tmp_path)
    assert result.returncode == 0 and "never finished its bootstrap" in result.stderr


def test_checkpoint_is_shellcheck_clean_and_free_of_runbook_placeholders(tmp_path):
    command = checkpoint_command()
    assert command.startswith("#!/bin/bash\n")
    assert "{{" not in command and "${" not in command
    script = tmp_path / "checkpoint.sh"
    script.write_text(command)
    result = subprocess.run([shellcheck(), "-s", "bash", str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout
