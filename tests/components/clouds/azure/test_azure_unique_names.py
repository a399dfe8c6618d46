"""Names Azure holds unique wider than a resource group: two image stacks in one subscription ask for different
galleries (galleries are unique per subscription), and two environments of one cluster share no name unique in a
subscription, a region or the whole cloud, even in one brought resource group."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from azure_plans import INFER, TRAIN, plan_variant, shipped, variant
from conftest import SHIPPED_STACKS, of_type, one
from image_stacks import images_stack

from gpufleet.clouds.azure.names import GALLERY, NAMES, VAULT
from gpufleet.plan.planner import PlanResult, plan_stack

IMAGES = SHIPPED_STACKS / "Pulumi.azure-images.yaml"
BUDGET = "azure-native:consumption:Budget"
STATIC = "time:index/static:Static"


def _gallery_name(plan: PlanResult) -> str:
    name = one(plan, GALLERY).inputs["galleryName"]
    assert not NAMES.rules[(GALLERY, "galleryName")].problems(name), name
    return name


def test_a_fork_of_the_image_stack_in_the_same_subscription_asks_for_another_gallery(tmp_path: Path) -> None:
    shipped = _gallery_name(plan_stack(IMAGES))
    # A fork keeps `name: images` and its region; only its Pulumi stack differs (Pulumi.azure-variant.yaml).
    forked = _gallery_name(plan_stack(images_stack(tmp_path, "azure")))
    assert re.fullmatch(r"gpufleet_images_[0-9a-f]{8}", shipped), shipped
    assert forked != shipped



def _wide_names(plan: PlanResult) -> set[tuple[str, str, str]]:
    """(type, input, name) of every name unique wider than one resource (a resource group, a subscription, a region,
    a tenant, the whole cloud)."""
    return {(r.type, path, value) for r in plan.resources for (typ, path), rule in NAMES.rules.items()
            if typ == r.type and rule.scope not in ("parent", "none") and isinstance(value := r.inputs.get(path), str)}


@pytest.mark.parametrize("stack", [TRAIN, INFER])
@pytest.mark.parametrize("resource_group", [None, "ml-shared"])
def test_two_environments_of_one_cluster_share_no_name(tmp_path: Path, stack: str, resource_group: str | None) -> None:
    plans = []
    for environment in ("dev", "prod"):
        cluster = variant(stack, environment=environment)
        if resource_group is not None:  # both environments in one brought resource group
            cluster["network"] = {**cluster["network"], "resource_group": resource_group}
        (tmp_path / environment).mkdir()
        plans.append(plan_variant(tmp_path / environment, cluster))
    dev, prod = (_wide_names(plan) for plan in plans)
    assert {typ for typ, _, _ in dev} >= ({VAULT, BUDGET} if stack == TRAIN else {VAULT})
    assert not dev & prod, sorted(dev & prod)


def test_the_vault_name_carries_its_creation_time_kept_in_state() -> None:
    """Purge protection keeps a destroyed vault's name taken for 90 days: the name derives from a time_static's
    id (its creation time, in state), which a destroy removes, so the next `up` asks for another name; a stack made
    before keeps its name (ignore_changes)."""
    plan = shipped(TRAIN)
    vault = one(plan, VAULT)
    (created,) = [r for r in of_type(plan, STATIC) if r.urn in vault.property_dependencies["vaultName"]]
    assert created.inputs == {} and created.parent == vault.parent
    assert list(vault.ignore_changes) == ["vaultName"]
    assert not NAMES.rules[(VAULT, "vaultName")].problems(vault.inputs["vaultName"])
