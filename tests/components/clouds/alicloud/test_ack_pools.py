"""The ACK node pools a `scheduler: kubernetes` Alibaba Cloud stack registers (one per node group) and the cluster's
autoscaler settings, run under the offline engine with a plain cluster id: ACK's own image with the lock's driver
pinned, disks on the stack's key, spot above an on-demand base, an eRDMA group in its one zone, a sharing group's
scheduling label, and the node check's startup taint."""

from __future__ import annotations

import copy
import json
from typing import Any

import pulumi
import pytest
from cluster_scope_program import registered_by
from conftest import read_cluster, shipped_plan

from components.clouds.alicloud.ack_pools import AckPoolArgs, ack_pools
from components.clouds.scope import ClusterScope
from components.kubernetes import NODE_CHECK_TAINT
from gpufleet.clouds.alicloud.ack_facts import DRIVER_LABEL, SCHEDULE_LABEL, SHARING_SCHEDULE
from gpufleet.clouds.backend import ResolvedCluster
from gpufleet.resolve import resolve_cluster

POOL = "alicloud:cs/nodePool:NodePool"
AUTOSCALING = "alicloud:cs/autoscalingConfig:AutoscalingConfig"
CLUSTER_ID = "c0123456789abcdef0123456789abcdef"
KEY = "key-abcdefgh12345678"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
NODE_CHECK = dict(zip(("key", "value", "effect"), NODE_CHECK_TAINT, strict=True))


def ack(stack: str, **group: Any) -> ResolvedCluster:
    cluster = copy.deepcopy(read_cluster(stack))
    cluster["scheduler"] = {"kind": "kubernetes", "version": "1.35", "admins": []}
    cluster["storage"]["kms_key"] = KEY
    cluster["node_groups"][0].update(group)
    return resolve_cluster(cluster)


def registered(resolved: ResolvedCluster) -> list[Any]:
    def step(scope: ClusterScope) -> None:
        zones = {zone: pulumi.Output.from_input(f"vsw-{zone}") for zone in resolved.spec.network.zones}
        ack_pools(scope, AckPoolArgs(cluster_id=pulumi.Output.from_input(CLUSTER_ID), vswitch_ids=zones,
                                     security_group_id=pulumi.Output.from_input("sg-0123456789abcdef"),
                                     key_id=pulumi.Output.from_input(KEY), contact_group=None))

    return registered_by(resolved, step)


def only(resources: list[Any], typ: str) -> Any:
    (found,) = [r for r in resources if r.type == typ]
    return found


@pytest.fixture(scope="module")
def train() -> list[Any]:
    """ebmgn8v: spot above one on-demand node, eRDMA, one zone, no idle."""
    return registered(ack("alicloud-train-ebmgn8v"))


@pytest.fixture(scope="module")
def infer() -> list[Any]:
    """gn7i over two zones, time-sliced, spot with a price cap, idle after an hour under 5%."""
    return registered(ack("alicloud-infer-gn7i", spot_max_price=0.5,
                          gpu_sharing={"mode": "time-slicing", "replicas": 4}, labels={"team": "search"}))


def test_a_pool_runs_acks_image_with_the_lock_drivers_label_and_the_node_check_taint(train: list[Any]) -> None:
    pool = only(train, POOL).inputs
    assert pool["clusterId"] == CLUSTER_ID and pool["type"] == "ess"
    assert pool["imageType"] == "AliyunLinux3" and "imageId" not in pool
    labels = {label["key"]: label["value"] for label in pool["labels"]}
    # terway-config: Terway's node-level config with the ENI whitelist for eRDMA nodes (terway_whitelist.py).
    assert labels == {"gpufleet.io/group": "h20", "gpufleet.io/fabric": "erdma", DRIVER_LABEL: "580.126.16",
                      "terway-config": "gpufleet-erdma-eni-whitelist"}
    assert pool["taints"] == [GPU_TAINT, NODE_CHECK]
    # The autoscaler leaves a startup-taint.cluster-autoscaler.kubernetes.io/ taint off its scale-from-zero template.
    assert NODE_CHECK["key"] == "startup-taint.cluster-autoscaler.kubernetes.io/gpufleet-node-check"
    # Nodes named <group>-<ip>: the ARMS rules tell the pool's nodes by name (ack_alerts.py).
    assert pool["nodeNameMode"] == "customized,h20-,ip,"
    for no_login in ("keyName", "password", "kmsEncryptedPassword"):
        assert no_login not in pool
    assert pool["internetMaxBandwidthOut"] == 0 and pool["instanceMetadataOptions"] == {"httpTokens": "required"}


def test_disks_are_encrypted_with_the_stacks_key_and_nodes_join_the_node_security_group(train: list[Any]) -> None:
    pool = only(train, POOL).inputs
    assert pool["systemDiskEncrypted"] is True and pool["systemDiskKmsKey"] == KEY
    assert pool["systemDiskCategory"] == "cloud_essd" and pool["systemDiskSize"] == 200
    assert pool["securityGroupIds"] == ["sg-0123456789abcdef"]


def test_spot_above_an_on_demand_base_in_the_erdma_groups_one_zone(train: list[Any]) -> None:
    pool = only(train, POOL).inputs
    assert pool["instanceTypes"] == ["ecs.ebmgn8v.48xlarge"]
    assert pool["vswitchIds"] == ["vsw-cn-wulanchabu-c"]
    assert pool["scalingConfig"] == {"enable": True, "minSize": 0, "maxSize": 16, "isBondEip": False}
    assert pool["spotStrategy"] == "SpotAsPriceGo" and "spotPriceLimits" not in pool
    assert pool["multiAzPolicy"] == "COST_OPTIMIZED"
    assert pool["onDemandBaseCapacity"] == "1" and pool["onDemandPercentageAboveBaseCapacity"] == "0"
    assert pool["spotInstanceRemedy"] is True and pool["compensateWithOnDemand"] is False


def test_a_sharing_group_gets_its_scheduling_label_and_a_price_cap_per_type(infer: list[Any]) -> None:
    pool = only(infer, POOL).inputs
    labels = {label["key"]: label["value"] for label in pool["labels"]}
    assert labels[SCHEDULE_LABEL] == SHARING_SCHEDULE["time-slicing"]
    assert labels["team"] == "search" and labels["gpufleet.io/fabric"] == "none"
    assert labels["nvidia.com/device-plugin.config"] == "group-a10"
    assert pool["vswitchIds"] == ["vsw-cn-beijing-h", "vsw-cn-beijing-i"]
    assert pool["spotStrategy"] == "SpotWithPriceLimit"
    assert pool["spotPriceLimits"] == [{"instanceType": "ecs.gn7i-c8g1.2xlarge", "priceLimit": "0.5"}]


def test_idle_groups_scale_down_through_acks_autoscaler_on_requested_gpus(infer: list[Any], train: list[Any]) -> None:
    config = only(infer, AUTOSCALING)
    assert config.inputs["clusterId"] == CLUSTER_ID and config.inputs["scalerType"] == "cluster-autoscaler"
    assert config.inputs["scaleDownEnabled"] is True
    assert config.inputs["unneededDuration"] == "60m" and config.inputs["gpuUtilizationThreshold"] == "0.05"
    assert config.inputs["maxGracefulTerminationSec"] == 120
    assert only(infer, POOL).urn in config.depends_on
    # Without idle the autoscaler still removes unneeded nodes, after its default 10 minutes, as on AKS.
    default = only(train, AUTOSCALING).inputs
    assert default["scaleDownEnabled"] is True and default["unneededDuration"] == "10m"
    assert "gpuUtilizationThreshold" not in default


def test_a_stack_label_on_a_key_ack_reads_is_refused_naming_the_field() -> None:
    with pytest.raises(Exception, match=r"node_groups\[0\]\.labels"):
        registered(ack("alicloud-infer-gn7i", labels={DRIVER_LABEL: "550.144.03"}))


@pytest.mark.parametrize("stack", ["alicloud-train-ack", "alicloud-infer-ack"])
def test_the_shipped_ack_stacks_plan_their_pools_at_the_driver_ack_installs(stack: str) -> None:
    """As shipped they name cuda12.8-r570-ack (installed_by: ack): every pool pins 570.169, a driver ACK lists, on
    ACK's own image, and the plan warns of no driver."""
    plan = shipped_plan(stack)
    pools = [r for r in plan.resources if r.type == POOL and r.inputs["nodePoolName"] != "system"]
    assert pools and [{label["key"]: label["value"] for label in pool.inputs["labels"]}[DRIVER_LABEL]
                      for pool in pools] == ["570.169"] * len(pools)
    assert all(pool.inputs["imageType"] == "AliyunLinux3" and "imageId" not in pool.inputs for pool in pools)
    assert not [w for w in plan.summary.get("warnings", []) if w.startswith("image:")]
    # The node check's DaemonSet checks the nodes against the same profile (the fabric manager on NVSwitch types).
    expected = [json.loads(r.inputs["data"]["expect.json"]) for r in plan.resources
                if r.type == "kubernetes:core/v1:ConfigMap" and "expect.json" in r.inputs.get("data", {})]
    assert expected and {(e["profile"], e["driver"], e["fabric_manager"], e["cuda"]) for e in expected} == {
        ("cuda12.8-r570-ack", "570.169", "570.169", "12.8")}
