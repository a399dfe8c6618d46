"""The boot node check retries a failure (a fabric manager still registering the fabric, IB ports still ARMED) on
every cloud, for as long as the cloud holds the node before it acts on a failed check: AWS's launch hook, Alibaba's
scale-out hook less the gate's admission check and OOS's work, Azure's automatic-repair grace period. Read from the
plans of the shipped stacks: the rendered bootstrap.env against the hold the plan registers."""

from __future__ import annotations

from azure_plans import TRAIN as AZURE_TRAIN
from azure_plans import VMSS, node_settings, one, shipped
from bootstrap_node import node_files, sent_user_data
from conftest import of_type, shipped_plan

from components.clouds.alicloud.lifecycle import ADMISSION_CHECK_SECONDS, GATE_OVERHEAD_SECONDS
from components.clouds.hooks import BOOT_SECONDS, CHECK_RUN_SECONDS, node_check_retry_seconds


def _retry(settings: dict[str, str]) -> int:
    return int(settings["GPUFLEET_NODECHECK_RETRY_SECONDS"])


def test_azure_retries_inside_the_repair_grace_period() -> None:
    # Before: 0, so a check that failed once right after boot marked the node Unhealthy for good and automatic
    # repairs replaced it.
    scale_set = one(shipped(AZURE_TRAIN), VMSS)
    grace = scale_set.inputs["automaticRepairsPolicy"]["gracePeriod"]  # ISO 8601 minutes, e.g. PT30M
    grace_seconds = int(grace.removeprefix("PT").removesuffix("M")) * 60
    retry = _retry(node_settings(scale_set))
    assert retry > 0 and BOOT_SECONDS + retry + CHECK_RUN_SECONDS <= grace_seconds


def test_alibaba_retries_inside_the_scale_out_hold() -> None:
    plan = shipped_plan("alicloud-train-ebmgn8v")
    hold = next(h.inputs["heartbeatTimeout"] for h in of_type(plan, "alicloud:ess/lifecycleHook:LifecycleHook")
                if h.inputs["lifecycleTransition"] == "SCALE_OUT")
    (config,) = of_type(plan, "alicloud:ess/scalingConfiguration:ScalingConfiguration")
    env = node_files(sent_user_data(config.inputs["userData"]))["/etc/gpufleet/bootstrap.env"]["content"]
    retry = _retry(dict(line.split("=", 1) for line in env.splitlines() if not line.startswith("#")))
    after = ADMISSION_CHECK_SECONDS + GATE_OVERHEAD_SECONDS
    assert retry > 0 and BOOT_SECONDS + retry + CHECK_RUN_SECONDS + after <= hold


def test_a_mig_node_boots_twice_in_the_hold_and_no_window_goes_below_zero() -> None:
    assert node_check_retry_seconds(900, 30, mig=True) == 900 - 2 * BOOT_SECONDS - CHECK_RUN_SECONDS - 30
    assert node_check_retry_seconds(900, 180, mig=True) == 0
