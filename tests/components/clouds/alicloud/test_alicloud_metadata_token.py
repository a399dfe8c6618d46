"""Alibaba node scripts under hardened metadata (launch templates set http_tokens required): a local metadata
server that refuses every read without a session token, real curl, and `aliyun` replaced by a recorder."""

from __future__ import annotations

import json
from pathlib import Path

from bootstrap_node import Node, config

from components.bootstrap.operations import GpuMetrics

ROLE = "train-node"
CREDENTIALS = {"Code": "Success", "AccessKeyId": "STS.NUabc", "AccessKeySecret": "s3cr3t", "SecurityToken": "CAIS",
               "Expiration": "2026-11-22T10:00:00Z", "LastUpdated": "2026-11-22T04:00:00Z"}


def hardened_node(tmp_path: Path, **changes: object) -> Node:
    node = Node(tmp_path, config("alicloud", **changes))
    (node.stubs / "curl").unlink()  # the real curl, against the local server
    node.stub("aliyun", 'echo "env $ALIBABACLOUD_IGNORE_PROFILE $ALIBABACLOUD_ACCESS_KEY_ID '
                        '$ALIBABACLOUD_ACCESS_KEY_SECRET $ALIBABACLOUD_SECURITY_TOKEN" >> "$STUB_LOG"')
    return node


def test_gpu_health_signs_with_role_credentials_read_under_a_token(tmp_path, alicloud_metadata) -> None:
    url, server = alicloud_metadata
    server.items.update({"instance-id": "i-2ze0abc", "ram/security-credentials/": ROLE,
                         f"ram/security-credentials/{ROLE}": json.dumps(CREDENTIALS)})
    node = hardened_node(tmp_path, gpu_metrics=GpuMetrics("12345678", "g", "cn-wulanchabu", scaling_group="g1"))
    node.stub("dcgmi", "cat <<'OUT'\nGPU 0     79      0      0      0      0      40\nOUT")
    run = node.run("gpufleet-gpu-health", "--once", GPUFLEET_ALICLOUD_METADATA=url)
    assert run.returncode == 0, run.stderr
    calls = [c for c in node.calls() if c.startswith(("aliyun", "env"))]
    # Each call: StsToken mode, no credential in argv (every user reads /proc/*/cmdline), the role's STS
    # credentials in the environment the pinned CLI 3.0.174 reads (config/profile.go OverwriteWithFlags).
    assert [c.split()[:4] for c in calls[::2]] == [
        ["aliyun", "--mode", "StsToken", "--region"], ["aliyun", "--mode", "StsToken", "--region"]]
    assert "cms PutCustomMetric" in calls[0] and "ess SetInstanceHealth --InstanceId i-2ze0abc" in calls[2]
    assert calls[1::2] == ["env TRUE STS.NUabc s3cr3t CAIS"] * 2
    assert not any("EcsRamRole" in c or "s3cr3t" in c for c in calls[::2])
    assert server.refused == []


def test_gpu_health_without_credentials_calls_nothing(tmp_path, alicloud_metadata) -> None:
    url, server = alicloud_metadata
    server.items.update({"ram/security-credentials/": ROLE,
                         f"ram/security-credentials/{ROLE}": json.dumps({"Code": "Failed"})})
    node = hardened_node(tmp_path, gpu_metrics=GpuMetrics("12345678", "g", "cn-wulanchabu", scaling_group="g1"))
    node.stub("dcgmi", "cat <<'OUT'\nGPU 0     0      0      0      0      0      40\nOUT")
    run = node.run("gpufleet-gpu-health", "--once", GPUFLEET_ALICLOUD_METADATA=url)
    assert not [c for c in node.calls() if c.startswith("aliyun")]
    assert f"no role credentials for {ROLE}" in run.stderr


def test_spot_watcher_reads_the_termination_notice_under_a_token(tmp_path, alicloud_metadata) -> None:
    url, server = alicloud_metadata
    server.items["instance/spot/termination-time"] = "2026-11-22T04:05:00Z"
    node = hardened_node(tmp_path, checkpoint_hook="echo hook ran >> \"$STUB_LOG\"")
    assert node.run("gpufleet-spot-watcher", "--once", GPUFLEET_ALICLOUD_METADATA=url).returncode == 0
    assert node.calls().count("hook ran") == 1 and server.refused == []


def test_spot_watcher_without_a_notice_runs_nothing(tmp_path, alicloud_metadata) -> None:
    url, server = alicloud_metadata
    node = hardened_node(tmp_path, checkpoint_hook="echo hook ran >> \"$STUB_LOG\"")
    assert node.run("gpufleet-spot-watcher", "--once", GPUFLEET_ALICLOUD_METADATA=url).returncode == 0
    assert "hook ran" not in node.calls() and server.refused == []


def test_node_check_reads_the_instance_type_under_a_token(alicloud_metadata, monkeypatch) -> None:
    from images.nodecheck import metadata as node_metadata  # the node check the image carries

    url, server = alicloud_metadata
    server.items["instance/instance-type"] = "ecs.ebmgn8v.48xlarge"
    monkeypatch.setattr(node_metadata, "ALICLOUD_METADATA", f"{url}/latest")
    assert node_metadata._alicloud() == "ecs.ebmgn8v.48xlarge"
    assert server.refused == []
