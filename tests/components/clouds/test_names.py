"""Every name gpufleet gives a resource fits its cloud's rules (clouds/C/names.py): every name-valued input of every
shipped plan has a row (or is named as no created name), a 32-character cluster name on every cloud plans only
names that fit their row, and a name unique wider than one stack differs between two stacks that differ only in
region."""

from __future__ import annotations

import copy
import importlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SHIPPED_STACKS
from ruamel.yaml import YAML

from gpufleet.clouds.naming import WIDER_THAN_STACK, NameTable, fit
from gpufleet.plan.planner import PlanResult, plan_stack
from gpufleet.yaml_model import read_yaml

LONG = "research-train-eastus2-abcdefghi"  # 32 characters: the most NAME_PATTERN allows
GROUP = "h100-spot-fall"  # with LONG, the longest `<cluster>-<group>` the spec takes (rules.MAX_DERIVED_NAME)
# Per cloud: a cluster stack, a second region whose catalog and lock serve it, and zones there.
OTHER_REGION = {
    "aws-infer-g6e": ("us-west-2", ["us-west-2a"]),
    "azure-infer-a100": ("southcentralus", ["1"]),
    "alicloud-infer-gn7i": ("cn-wulanchabu", ["cn-wulanchabu-c"]),
}
IMAGE_STACKS = ("aws-images", "azure-images", "alicloud-images")


def table(cloud: str) -> NameTable:
    return importlib.import_module(f"gpufleet.clouds.{cloud}.names").NAMES


def name_inputs(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(path, value) of every text input whose key ends in `name`, paths as the tables write them."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from name_inputs(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for item in value:
            yield from name_inputs(item, f"{path}[]")
    elif isinstance(value, str) and re.search(r"name$", path.rsplit(".", 1)[-1].removesuffix("[]"), re.I):
        yield path, value


def created_names(plan: PlanResult) -> Iterator[tuple[str, str, str]]:
    """(type, path, value) of every name the plan gives a resource that its cloud's table has a row for."""
    names = table(plan.cloud)
    for resource in plan.resources:
        for path, value in name_inputs(resource.inputs):
            if names.rule(resource.type, path) is not None:
                yield resource.type, path, value


def stack_config(stack: str) -> dict[str, Any]:
    return copy.deepcopy(read_yaml(SHIPPED_STACKS / f"Pulumi.{stack}.yaml")["config"])


def plan_config(tmp_path: Path, name: str, config: dict[str, Any]) -> PlanResult:
    """Plan a stack file holding `config`, its provider region key set to the stack's region."""
    body = config.get("gpufleet:cluster") or config["gpufleet:images"]
    region_key = next(key for key in config if key.endswith((":region", ":location")))
    config[region_key] = body.get("region") or body["regions"][0]
    path = tmp_path / f"Pulumi.{name}.yaml"
    with path.open("w", encoding="utf-8") as handle:
        YAML(typ="safe", pure=True).dump({"config": config}, handle)
    return plan_stack(path)


def long_named(stack: str, region: str | None = None, zones: list[str] | None = None) -> dict[str, Any]:
    """The shipped stack with a 32-character name (a cluster's first group named as long as the spec lets it),
    optionally in another region."""
    config = stack_config(stack)
    if "gpufleet:images" in config:
        images = config["gpufleet:images"]
        images["name"] = LONG
        return config
    cluster = config["gpufleet:cluster"]
    cluster["name"] = LONG
    cluster["node_groups"][0]["name"] = GROUP
    cluster.pop("extends", None)
    if region is not None:
        cluster["region"], cluster["network"]["zones"] = region, zones
    return config


def test_every_name_input_of_every_shipped_plan_has_a_row(shipped_plans: dict[str, PlanResult]) -> None:
    """A name a component starts passing without a row in its cloud's table fails here."""
    missing = set()
    for plan in shipped_plans.values():
        names = table(plan.cloud)
        # Kubernetes objects' names are checked by the API schemas (kubernetes-validate), not by a cloud's table.
        for resource in (r for r in plan.resources if not r.type.startswith("kubernetes:")):
            for path, _ in name_inputs(resource.inputs):
                if names.rule(resource.type, path) is None and (resource.type, path) not in names.not_created:
                    missing.add((resource.type, path))
    assert not missing, sorted(missing)


@pytest.mark.parametrize("cloud", ["aws", "azure", "alicloud"])
def test_every_row_is_sourced_and_its_pattern_compiles(cloud: str) -> None:
    for rule in table(cloud).rules.values():
        re.compile(rule.chars)
        assert len(rule.source) > 20, rule


@pytest.mark.parametrize("stack", [*OTHER_REGION, "aws-train-p5", "azure-train-ndh100", "alicloud-train-ebmgn8v",
                                   *IMAGE_STACKS])
def test_a_32_character_cluster_name_plans_only_names_that_fit(tmp_path: Path, stack: str) -> None:
    plan = plan_config(tmp_path, "long", long_named(stack))
    names = table(plan.cloud)
    found = list(created_names(plan))
    assert found, "the plan gives no resource a name its table lists"
    bad = [(typ, path, value, problems) for typ, path, value in found
           if (problems := names.rules[(typ, path)].problems(value))]
    assert not bad, bad
    # A name unique over the whole cloud, or a region of every account, is never left to the engine's autoname
    # (azure-native cuts an autoname only where the API spec gives a length, and Key Vault's gives none).
    unnamed = [(r.type, rule.path) for r in plan.resources for rule in names.rules.values()
               if rule.type == r.type and rule.scope in ("global", "region, every account")
               and rule.path not in r.inputs]
    assert not unnamed, unnamed


@pytest.mark.parametrize("stack", list(OTHER_REGION))
def test_names_unique_wider_than_a_stack_differ_between_regions(tmp_path: Path, stack: str) -> None:
    first = plan_config(tmp_path, "first", long_named(stack))
    region, zones = OTHER_REGION[stack]
    second = plan_config(tmp_path, "second", long_named(stack, region, zones))
    assert first.region != second.region
    names = table(first.cloud)

    def wide(plan: PlanResult) -> set[tuple[str, str, str]]:
        return {n for n in created_names(plan) if names.rules[n[:2]].scope in WIDER_THAN_STACK}

    shared = wide(first) & wide(second)
    assert not shared, sorted(shared)


def test_fit_keeps_a_name_that_fits_and_hashes_one_unique_wider_than_the_stack() -> None:
    assert fit("train-events", 63) == "train-events"
    scoped = fit("train-events", 63, "cn-beijing", "1234")
    assert re.fullmatch(r"train-events-[0-9a-f]{8}", scoped)
    assert scoped == fit("train-events", 63, "cn-beijing", "1234")  # deterministic
    assert scoped != fit("train-events", 63, "cn-wulanchabu", "1234")
    cut = fit(f"{LONG}--disk", 24, "eastus")
    assert len(cut) <= 24 and "--" not in cut and cut.startswith("research-train")
    # Two long names sharing their first characters stay apart when cut.
    assert fit("a" * 70 + "-x", 64) != fit("a" * 70 + "-y", 64)


def test_a_cluster_name_longer_than_every_table_fits_is_refused_naming_the_field(tmp_path: Path) -> None:
    """32 is the spec's longest cluster name (every derived name fits it above); one more character exits 2
    naming `name`, before any resource."""
    from typer.testing import CliRunner

    from gpufleet.cli import app

    config = long_named("azure-train-ndh100")
    config["gpufleet:cluster"]["name"] = LONG + "x"
    config["azure-native:location"] = config["gpufleet:cluster"]["region"]
    path = tmp_path / "Pulumi.toolong.yaml"
    with path.open("w", encoding="utf-8") as handle:
        YAML(typ="safe", pure=True).dump({"config": config}, handle)
    result = CliRunner().invoke(app, ["plan", "--stack-file", str(path)])
    assert result.exit_code == 2, result.output
    assert "name:" in result.output and "Traceback" not in result.output
