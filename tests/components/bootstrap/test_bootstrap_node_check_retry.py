"""The boot node check starts after the GPU services it reads, and a check that finds drift right
after boot is run again for a bounded time before the launch hook is completed with ABANDON."""

from __future__ import annotations

import configparser

from bootstrap_node import Node, config

from components.bootstrap.cloud_init import node_script

AWS_IMDS = {"/latest/api/token": "tok-1", "/meta-data/instance-id": "i-0abc"}
# Fails on its first run (the fabric manager still training the fabric), passes from the second on.
FAILS_ONCE = 'n=$(cat "$FAKE/checks" 2>/dev/null || echo 0); echo $((n + 1)) > "$FAKE/checks"; ((n >= 1)) || exit 1'


def _checks(node: Node) -> list[str]:
    return [c for c in node.calls() if c.startswith("gpufleet-nodecheck ")]


def _completions(node: Node) -> list[str]:
    return [c.rsplit(" ", 1)[1] for c in node.calls() if c.startswith("aws autoscaling complete-lifecycle-action")]


def test_a_check_that_fails_then_passes_continues_the_launch(tmp_path) -> None:
    node = Node(tmp_path, config("aws", node_check_retry_seconds=450))
    node.curl(AWS_IMDS)
    node.stub("gpufleet-nodecheck", FAILS_ONCE)
    node.stub("sleep", "exit 0")
    run = node.run("gpufleet-health")
    assert run.returncode == 0, run.stderr
    assert len(_checks(node)) == 2
    assert "sleep 30" in node.calls()
    # One completion, after the retry: the hook is never answered ABANDON for a failure that healed.
    assert _completions(node) == ["CONTINUE"]
    assert (node.root / "run/gpufleet/healthy").exists() and not (node.root / "run/gpufleet/unhealthy").exists()


def test_drift_that_stays_is_abandoned_once_the_retry_time_is_spent(tmp_path) -> None:
    node = Node(tmp_path, config("aws", node_check_retry_seconds=2, node_check_retry_interval=1))
    node.curl(AWS_IMDS)
    node.stub("gpufleet-nodecheck", "exit 1")
    run = node.run("gpufleet-health")
    assert run.returncode == 1
    # 2 s of retries, one second apart: a check at most every second, the last one no later than the bound.
    assert 2 <= len(_checks(node)) <= 3
    assert _completions(node) == ["ABANDON"]
    assert (node.root / "run/gpufleet/unhealthy").exists()


def test_an_unreadable_expectation_is_not_retried(tmp_path) -> None:
    node = Node(tmp_path, config("aws", node_check_retry_seconds=450))
    node.curl(AWS_IMDS)
    node.stub("gpufleet-nodecheck", "exit 2")
    node.stub("sleep", "exit 0")
    assert node.run("gpufleet-health").returncode == 1
    assert len(_checks(node)) == 1 and not [c for c in node.calls() if c.startswith("sleep")]
    assert _completions(node) == ["ABANDON"]


def test_without_a_retry_time_one_failure_decides(tmp_path) -> None:
    node = Node(tmp_path, config("azure"))
    node.stub("gpufleet-nodecheck", FAILS_ONCE)
    node.stub("sleep", "exit 0")
    assert node.run("gpufleet-health").returncode == 1
    assert len(_checks(node)) == 1


def test_the_check_starts_after_persistence_and_the_fabric_manager() -> None:
    unit = configparser.ConfigParser(strict=False)
    unit.read_string(node_script("gpufleet-health.service"))
    after, wants = unit["Unit"]["After"].split(), unit["Unit"]["Wants"].split()
    assert {"nvidia-persistenced.service", "nvidia-fabricmanager.service"} <= set(after)
    # Persistence runs on every image; the fabric manager is started by the render on NVSwitch groups only.
    assert "nvidia-persistenced.service" in wants and "nvidia-fabricmanager.service" not in wants
    # A oneshot has no start timeout unless one is set: none may cut the retries short.
    assert "TimeoutStartSec" not in unit["Service"] and unit["Service"]["Type"] == "oneshot"
