"""Issue 39, ACK: the system group is its own node pool of on-demand CPU nodes with no taint and no driver label,
on every zone's vSwitch, disks on the stack key; the in-cluster layer waits for it."""

from __future__ import annotations

import pytest
from conftest import of_type, read_cluster, without_job_operators, write_stack

from gpufleet.clouds.alicloud.ack_facts import DRIVER_LABEL
from gpufleet.plan.planner import PlanResult, plan_stack

POOL = "alicloud:cs/nodePool:NodePool"


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> PlanResult:
    cluster = without_job_operators(read_cluster("alicloud-infer-ack"))  # the pools, not what runs on them
    return plan_stack(write_stack(tmp_path_factory.mktemp("ack"), "ack", cluster))


def test_the_system_pool_is_untainted_on_demand_cpu(plan: PlanResult) -> None:
    (system,) = [p for p in of_type(plan, POOL) if p.inputs["nodePoolName"] == "system"]
    inputs = system.inputs
    assert "taints" not in inputs and inputs["labels"] == [{"key": "gpufleet.io/role", "value": "system"}]
    assert DRIVER_LABEL not in {label["key"] for label in inputs["labels"]}
    assert (inputs["instanceTypes"], inputs["spotStrategy"]) == (["ecs.g7.xlarge"], "NoSpot")
    assert inputs["scalingConfig"] == {"enable": True, "isBondEip": False, "minSize": 2, "maxSize": 3}
    assert len(inputs["vswitchIds"]) == 2 and inputs["systemDiskEncrypted"] is True
    assert inputs["instanceMetadataOptions"] == {"httpTokens": "required"}
    (provider,) = [r for r in plan.resources if r.type == "pulumi:providers:kubernetes"]
    assert system.urn in provider.depends_on


def test_the_gpu_pools_keep_the_gpu_taint(plan: PlanResult) -> None:
    gpu = [p for p in of_type(plan, POOL) if p.inputs["nodePoolName"] != "system"]
    assert gpu and all({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"} in p.inputs["taints"]
                       for p in gpu)
