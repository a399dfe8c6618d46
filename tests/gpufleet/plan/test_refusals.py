"""What a real `pulumi up` refuses, the plan names (summary.refusals: the field and the fix), on every cloud alike.

The walk: every call of `runtime.refuse` in the program is found in the source, and each must be listed here
with a stack that reaches it; the plan of that stack must name the refusal's field. A new refusal without a case
fails the walk. A real run (not offline) of the same stack stops at the plan's first refusal, in its words."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pulumi
import pytest
from alicloud_boot_lock import REGION, recorded_facts, use_lock
from conftest import REPO, SHIPPED_STACKS, write_stack
from slurm_stacks import slurm_cluster

from components import runtime
from gpufleet.plan.engine import run_program
from gpufleet.plan.planner import plan_stack
from gpufleet.program import build
from gpufleet.stackfile import load_stack

# The function that calls runtime.refuse -> (a stack that reaches it, the field its plan names).
CASES: dict[str, tuple[str, str]] = {
    "gpufleet.program.refuse_unbaked_image": ("azure-train-ndh100", "image"),
    "gpufleet.program.refuse_unconfirmed_base_image": ("alicloud-images", f"images/lock.yaml base_images.alicloud."
                                                                          f"{REGION}.uefi"),
    "gpufleet.program.refuse_placeholders": ("alicloud-infer-gn7i", "storage.kms_key"),
    "components.clouds.azure.cluster.refuse_without_admin_key": ("azure-infer-a100", "admin_ssh_public_key"),
    "components.clouds.alicloud.ack_in_cluster.refuse_unlisted_driver": ("ack-on-a-bake-profile", "image"),
    "components.clouds.azure.slurm_head.munge_vault_usable": ("slurm-ndh100-brought-key", "storage.kms_key"),
    # An Azure group that scales with the queue, under a lock that pins no power program SDK for Azure.
    "components.slurm.power_units.refuse_elastic_without_power_program": ("slurm-ndh100-no-power-sdk",
                                                                          "node_groups[0].size"),
}
# A brought disk key on Azure: its vault is the owner's, not set up for the munge key.
BROUGHT_KEY = {
    "kms_key": "https://shared-kv.vault.azure.net/keys/disks/0123456789abcdef0123456789abcdef",
    "key_vault_id": "/subscriptions/0b1f6471-1bf0-4dda-aec3-111122223333/resourceGroups/shared/providers/"
                    "Microsoft.KeyVault/vaults/shared-kv",
    "shared": None,
}


def refusing_functions() -> set[str]:
    """module.function of every function whose body calls runtime.refuse."""
    found = set()
    for root in ("gpufleet", "components"):
        for path in sorted((REPO / root).rglob("*.py")):
            module = ".".join(path.relative_to(REPO).with_suffix("").parts)
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef) and any(
                    isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "refuse"
                    and isinstance(call.func.value, ast.Name) and call.func.value.id == "runtime"
                    for call in ast.walk(node)
                ):
                    found.add(f"{module}.{node.name}")
    return found


def test_every_refusal_in_the_program_has_a_case() -> None:
    assert refusing_functions() == set(CASES)


def test_no_refusal_is_skipped_offline_by_hand() -> None:
    # A refusal gated on running_offline() is one the plan would never name: runtime.refuse records it instead.
    gated = []
    for root in ("gpufleet", "components"):
        for path in (REPO / root).rglob("*.py"):
            if path.name != "runtime.py" and "running_offline()" in path.read_text(encoding="utf-8"):
                gated.append(str(path.relative_to(REPO)))
    # Unread facts have their own finding (summary.unresolved_facts) and refusal (runtime.refuse_unread).
    assert sorted(gated) == ["components/clouds/alicloud/images_stack.py", "components/kubernetes/pins.py"]


@pytest.fixture
def stacks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / "stacks"
    target.mkdir()
    for path in SHIPPED_STACKS.glob("Pulumi.*.yaml"):
        (target / path.name).write_text(path.read_text())
    cluster: dict[str, Any] = {"extends": "alicloud-train-ack", "name": "ack-bake", "image": "cuda12.8-r580"}
    write_stack(target, "ack-on-a-bake-profile", cluster, **{"alicloud:region": "cn-wulanchabu"})
    write_stack(target, "slurm-p5", slurm_cluster("aws-train-p5"))
    write_stack(target, "slurm-ndh100", slurm_cluster("azure-train-ndh100"))
    write_stack(target, "slurm-ndh100-no-power-sdk", slurm_cluster("azure-train-ndh100"))
    write_stack(target, "slurm-ebmgn8v", slurm_cluster("alicloud-train-ebmgn8v"))
    brought = slurm_cluster("azure-train-ndh100")
    brought["storage"] = {**brought["storage"], **BROUGHT_KEY}
    write_stack(target, "slurm-ndh100-brought-key", brought)
    return target


def _lock_for(stack: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if stack == "alicloud-images":  # the shipped lock has both Alibaba bases; one made unconfirmed reaches it
        def unconfirm(raw: dict) -> None:
            raw["base_images"]["alicloud"][REGION]["uefi"] = {
                "parent_image": None, "status": "unconfirmed", "os": "Ubuntu 22.04", "note": "Confirm one."}

        use_lock(tmp_path, monkeypatch, unconfirm, recorded_facts())
    if stack == "slurm-ndh100-no-power-sdk":
        def unpin(raw: dict) -> None:
            del raw["profiles"]["cuda12.8-r580"]["slurm"]["power_sdk"]["azure"]

        use_lock(tmp_path, monkeypatch, unpin)


@pytest.mark.parametrize("function", sorted(CASES))
def test_the_plan_names_each_refusal_and_a_real_run_raises_it(
        function: str, stacks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stack, field = CASES[function]
    _lock_for(stack, tmp_path, monkeypatch)
    path = stacks / f"Pulumi.{stack}.yaml"
    plan = plan_stack(path, stacks)
    named = [r for r in plan.summary.get("refusals", []) if r["field"] == field]
    assert named and all(r["message"] for r in named), plan.summary.get("refusals")
    monkeypatch.setattr(runtime, "running_offline", lambda: False)  # as under the Pulumi CLI
    config = load_stack(path, stacks)
    with pytest.raises(pulumi.RunError) as refused:
        run_program(lambda: build(), config, project="gpufleet", stack=stack, region="r", zones=[])
    # A real run stops at the first refusal the plan names, in the same words.
    first = plan.summary["refusals"][0]
    assert str(refused.value) == f"{first['field']}: {first['message']}"


@pytest.mark.parametrize("stack", ["slurm-p5", "slurm-ndh100", "slurm-ebmgn8v"])
def test_slurm_is_not_refused_on_any_cloud(stack: str, stacks: Path) -> None:
    # Every cloud builds the head node, the munge key's store and the nodes' join (components/clouds/<cloud>/
    # slurm_head.py).
    refusals = plan_stack(stacks / f"Pulumi.{stack}.yaml", stacks).summary["refusals"]
    assert "scheduler.kind" not in [r["field"] for r in refusals]
    # The shipped lock pins both clouds' power program SDK: a group that scales with the queue is not refused.
    assert "node_groups[0].size" not in [r["field"] for r in refusals]


def test_placeholders_of_every_kind_are_named(stacks: Path) -> None:
    cluster: dict[str, Any] = {"extends": "aws-train-p5", "name": "holders",
                               "network": {"admin_cidrs": ["203.0.113.0/24"]},
                               "monitoring": {"alarms": {"target": "create", "emails": ["ops@corp.example.org"]}}}
    write_stack(stacks, "holders", cluster)
    refusals = {r["field"]: r["message"] for r in plan_stack(stacks / "Pulumi.holders.yaml", stacks)
                .summary["refusals"]}
    assert refusals["network.admin_cidrs[0]"].startswith("'203.0.113.0/24' is a documentation address range")
    assert "documentation domain" in refusals["monitoring.alarms.emails[0]"]
    clean = {"extends": "aws-train-p5", "name": "clean", "monitoring": {"alarms": {"target": "create",
                                                                                   "emails": ["ops@corp.io"]}}}
    write_stack(stacks, "clean", clean)
    assert [r["field"] for r in plan_stack(stacks / "Pulumi.clean.yaml", stacks).summary["refusals"]] == ["image"]
