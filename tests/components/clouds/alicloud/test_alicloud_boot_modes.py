"""Boot modes on Alibaba Cloud: the catalog's cited boot modes load, a group boots the lock's image of its types'
boot mode (the scaling configuration's image id), and a group whose types cannot boot any image the profile keeps in
the region, or whose boot modes nobody cited, is refused naming the type's field and both boot modes."""

from __future__ import annotations

from pathlib import Path

import pytest
from alicloud_boot_lock import use_lock
from conftest import SHIPPED_STACKS, read_cluster, write_stack
from stack_errors import errors_by_field
from typer.testing import CliRunner

from gpufleet.catalog import load_catalog
from gpufleet.cli import app
from gpufleet.lock import load_lock
from gpufleet.plan.planner import plan_stack
from gpufleet.resolve import resolve_cluster

CONFIG = "alicloud:ess/scalingConfiguration:ScalingConfiguration"
TEMPLATE = "alicloud:ecs/ecsLaunchTemplate:EcsLaunchTemplate"
PROFILE = "cuda12.8-r580"
# Custom image ids of the documented shape (m-...), as `images pin` would write them after a bake.
BAKED = {"uefi": "m-0jl8d1ej4mkbbq3ya2lm", "bios": "m-0jl3bv2ln8m1rfqkvx7c"}
BOOT_TABLE = "doc-detail/324257"  # Alibaba's boot-mode table, cited in the catalog's header and rows


def test_catalog_rows_carry_cited_boot_modes_or_say_why_not() -> None:
    catalog = load_catalog()
    modes = {name: catalog.get("alicloud", name).boot_modes for name in catalog.names("alicloud")}
    assert modes == {
        "ecs.ebmgn7e.32xlarge": ["bios"], "ecs.ebmgn8v.48xlarge": ["uefi"], "ecs.gn7-c13g1.26xlarge": ["bios"],
        "ecs.gn7e-c16g1.32xlarge": ["bios"], "ecs.gn7i-c32g1.32xlarge": ["bios"], "ecs.gn7i-c8g1.2xlarge": ["bios"],
        "ecs.gn8is-8x.32xlarge": None, "ecs.sccgn7ex.32xlarge": ["bios"]}
    for name, found in modes.items():
        row = catalog.get("alicloud", name)
        if found == ["bios"]:
            assert "boot-modes (Legacy BIOS only" in row.source
        elif found is None:
            assert "boot_modes" in row.unconfirmed
    assert BOOT_TABLE in (Path(__file__).parents[4] / "gpufleet/catalog/data/alicloud.yaml").read_text()


def bake_both(raw: dict) -> None:
    """The profile's Alibaba images pinned in both regions, one id per boot mode."""
    for region in raw["profiles"][PROFILE]["images"]["alicloud"].values():
        for mode, entry in region.items():
            entry.update(id=BAKED[mode], status="baked")


@pytest.mark.parametrize(("stack", "mode"), [("alicloud-infer-gn7i", "bios"), ("alicloud-train-ebmgn8v", "uefi")])
def test_a_group_boots_the_image_of_its_types_boot_mode(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stack: str, mode: str) -> None:
    use_lock(tmp_path, monkeypatch, bake_both)
    plan = plan_stack(SHIPPED_STACKS / f"Pulumi.{stack}.yaml", SHIPPED_STACKS)
    assert plan.exit_code == 0, plan.policies["violations"]
    # The scaling configuration (ESS) or the launch template (fleet) the group launches from.
    (launch,) = [r for r in plan.resources if r.type in (CONFIG, TEMPLATE)]
    assert launch.inputs["imageId"] == BAKED[mode]


def only_uefi_images(raw: dict) -> None:
    for region in raw["profiles"][PROFILE]["images"]["alicloud"].values():
        region.pop("bios")


def test_a_bios_only_type_on_a_uefi_only_image_is_refused_naming_the_field(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_lock(tmp_path, monkeypatch, only_uefi_images)
    cluster = read_cluster("alicloud-infer-gn7i")
    assert list(errors_by_field(cluster)) == ["node_groups[0].instance_types[0]"]
    result = CliRunner().invoke(app, ["plan", "--stack-file", str(write_stack(tmp_path, "gn7i", cluster)),
                                      "--format", "json"])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert ("node_groups[0].instance_types[0]: ecs.gn7i-c8g1.2xlarge boots Legacy BIOS only, but image profile "
            "'cuda12.8-r580' in cn-beijing has images for UEFI") in said


def test_the_matching_type_on_that_lock_is_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lock = load_lock(use_lock(tmp_path, monkeypatch, only_uefi_images))
    resolved = resolve_cluster(read_cluster("alicloud-train-ebmgn8v"), lock=lock)
    (group,) = resolved.groups
    assert resolved.group_boot_mode(group) == "uefi"
    assert resolved.group_image(group) == lock.image_entry(PROFILE, "alicloud", "cn-wulanchabu", "uefi")


def test_a_type_whose_boot_modes_nobody_cited_is_refused_saying_so() -> None:
    cluster = read_cluster("alicloud-train-ebmgn8v")
    cluster["node_groups"][0]["instance_types"] = ["ecs.gn8is-8x.32xlarge"]
    errors = errors_by_field(cluster)
    message = errors["node_groups[0].instance_types[0]"]
    assert "ecs.gn8is-8x.32xlarge: the catalog records no boot modes for it" in message
    assert "is in no row of the boot-modes table read" in message and "UEFI, Legacy BIOS" in message


def test_a_fallback_that_boots_no_boot_mode_of_the_primary_is_refused() -> None:
    cluster = read_cluster("alicloud-train-ebmgn8v")
    cluster["node_groups"][0]["instance_types"] = ["ecs.ebmgn8v.48xlarge", "ecs.ebmgn7e.32xlarge"]
    errors = errors_by_field(cluster)
    message = errors["node_groups[0].instance_types[1]"]
    assert ("ecs.ebmgn7e.32xlarge boots Legacy BIOS only, but the group's types before it boot UEFI of the images "
            "of image profile 'cuda12.8-r580' in cn-wulanchabu: a group boots one image") in message


def test_ack_node_pools_boot_acks_image_and_are_not_asked() -> None:
    for stack in ("alicloud-train-ack", "alicloud-infer-ack"):
        resolved = resolve_cluster(read_cluster(stack))
        assert resolved.spec.scheduler.kind == "kubernetes"
