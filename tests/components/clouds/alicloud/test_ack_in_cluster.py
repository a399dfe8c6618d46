"""What the in-cluster layer is told about an ACK cluster: per group the labels its pool's nodes carry (the lock's
driver pin, the sharing schedule ack-ai-installer reads), the node check's startup taint, and the operator's
kubeconfig command."""

from __future__ import annotations

import copy
from pathlib import Path

from conftest import read_cluster, write_stack

from components.clouds.alicloud.ack_in_cluster import credentials_command, in_cluster_groups
from components.kubernetes import NODE_CHECK_TAINT
from gpufleet.clouds.alicloud.ack_facts import DRIVER_LABEL, SCHEDULE_LABEL
from gpufleet.prepare import prepare
from gpufleet.stackfile.read import load_stack


def resolved(tmp_path: Path, stack: str, sharing: dict[str, object] | None = None) -> object:
    cluster = copy.deepcopy(read_cluster(stack))
    cluster["scheduler"] = {"kind": "kubernetes", "version": "1.35"}
    if sharing is not None:
        cluster["node_groups"][0]["gpu_sharing"] = sharing
    return prepare(load_stack(write_stack(tmp_path, "ack", cluster)))


def test_an_erdma_group_pins_the_lock_driver_and_starts_tainted_by_the_node_check(tmp_path: Path) -> None:
    cluster = resolved(tmp_path, "alicloud-train-ebmgn8v")
    (group,) = in_cluster_groups(cluster)  # type: ignore[arg-type]
    assert group.fabric == "erdma"
    assert group.labels[DRIVER_LABEL] == cluster.profile.driver  # type: ignore[attr-defined]
    assert SCHEDULE_LABEL not in group.labels
    assert NODE_CHECK_TAINT in group.taints
    assert group.spot


def test_a_time_sliced_group_is_scheduled_as_shared_by_ack_ai_installer(tmp_path: Path) -> None:
    cluster = resolved(tmp_path, "alicloud-infer-gn7i", {"mode": "time-slicing", "replicas": 4})
    (group,) = in_cluster_groups(cluster)  # type: ignore[arg-type]
    assert group.fabric == "none"
    assert group.labels[SCHEDULE_LABEL] == "share"
    assert group.sharing_mode == "time-slicing"


def test_the_kubeconfig_command_reads_the_clusters_user_config() -> None:
    assert credentials_command("c0123").startswith("aliyun cs GET /k8s/c0123/user_config")
