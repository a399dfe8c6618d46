"""The stack-file schema for editors: checked in, in sync with the models, named by every shipped stack, and
accepting every shipped stack; what it refuses, and what it lets an `extends` file leave out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, SHIPPED_STACKS
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.stackfile import stack_names, stack_path
from gpufleet.yaml_model import read_yaml

SCHEMA_FILE = REPO / "schemas" / "stack-file.schema.json"
REGENERATE = "run `gpufleet schema --stack-file > schemas/stack-file.schema.json`"
MODELINE = "# yaml-language-server: $schema="


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def problems(validator: Draft202012Validator, doc: Any) -> list[str]:
    return [error.message for error in validator.iter_errors(doc)]


def test_checked_in_schema_is_what_the_command_prints() -> None:
    result = CliRunner().invoke(app, ["schema", "--stack-file"])
    assert result.exit_code == 0, result.output
    assert result.output == SCHEMA_FILE.read_text(encoding="utf-8"), f"the checked-in schema is stale: {REGENERATE}"


def test_plain_schema_command_still_prints_the_cluster_schema() -> None:
    schema = json.loads(CliRunner().invoke(app, ["schema"]).output)
    assert schema["title"] == "gpufleet:cluster"


@pytest.mark.parametrize("stack", stack_names(SHIPPED_STACKS))
def test_shipped_stack_names_the_schema_on_its_first_line(stack: str) -> None:
    path = stack_path(SHIPPED_STACKS, stack)
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith(MODELINE), first
    assert (path.parent / first[len(MODELINE):]).resolve() == SCHEMA_FILE.resolve()


@pytest.mark.parametrize("stack", stack_names(SHIPPED_STACKS))
def test_shipped_stack_validates(validator: Draft202012Validator, stack: str) -> None:
    assert problems(validator, read_yaml(stack_path(SHIPPED_STACKS, stack))) == []


def shipped(stack: str) -> dict[str, Any]:
    return read_yaml(stack_path(SHIPPED_STACKS, stack))


def test_a_misspelled_cluster_field_is_refused(validator: Draft202012Validator) -> None:
    doc = shipped("aws-train-p5")
    doc["config"]["gpufleet:cluster"]["node_group"] = doc["config"]["gpufleet:cluster"].pop("node_groups")
    assert problems(validator, doc)


def test_a_field_of_another_cloud_is_refused_with_its_own_clouds_error_only(validator: Draft202012Validator) -> None:
    # if/then on `cloud`: a standard validator reports the AWS branch's error, not every other cloud's too.
    doc = shipped("aws-train-p5")
    doc["config"]["gpufleet:cluster"]["network"]["vnet_id"] = "/subscriptions/x"
    assert problems(validator, doc) == ["Additional properties are not allowed ('vnet_id' was unexpected)"]


def test_instance_types_and_regions_are_the_clouds_own(validator: Draft202012Validator) -> None:
    doc = shipped("aws-train-p5")
    cluster = doc["config"]["gpufleet:cluster"]
    cluster["node_groups"][0]["instance_types"] = ["Standard_ND96isr_H100_v5"]
    cluster["region"] = "eastus"
    found = problems(validator, doc)
    assert len(found) == 2
    assert any(m.startswith("'Standard_ND96isr_H100_v5' is not one of ['") and "'p5.48xlarge'" in m for m in found)
    assert any(m.startswith("'eastus' is not one of ['") and "'us-east-1'" in m for m in found)


def test_a_cluster_without_its_required_fields_is_refused(validator: Draft202012Validator) -> None:
    doc = shipped("aws-train-p5")
    del doc["config"]["gpufleet:cluster"]["node_groups"]
    assert problems(validator, doc)


def test_config_keys_are_namespaced_and_gpufleet_keys_known(validator: Draft202012Validator) -> None:
    for key in ("region", "gpufleet:clusters"):
        doc = shipped("aws-train-p5")
        doc["config"][key] = "x"
        assert any(repr(key) in message for message in problems(validator, doc)), key
    doc = shipped("aws-train-p5")
    doc["config"].update({"aws:profile": "ml", "kubernetes:context": "gpu", "aws:accessKey": {"secure": "v1:x"}})
    assert problems(validator, doc) == []


def test_pulumi_stack_settings_keys_are_allowed_and_others_refused(validator: Draft202012Validator) -> None:
    doc = shipped("aws-images")
    doc.update({"secretsprovider": "passphrase", "encryptionsalt": "v1:x", "environment": ["ml/aws"]})
    assert problems(validator, doc) == []
    doc["configs"] = {}
    assert problems(validator, doc)


def test_policy_names_levels_and_settings_come_from_the_pack(validator: Draft202012Validator) -> None:
    from policies.registry import RULES

    with_settings = next(rule for rule in RULES if rule.policy.config_schema and rule.policy.config_schema.properties)
    setting, spec = next(iter(with_settings.policy.config_schema.properties.items()))
    wrong = "text" if spec.get("type") == "object" else {"not": "this"}
    doc = shipped("aws-train-p5")
    for policy, ok in (({"all": "advisory"}, True), ({RULES[0].name: "mandatory"}, True),
                       ({RULES[0].name: "strict"}, False), ({"no-such-policy": "advisory"}, False),
                       ({with_settings.name: {"enforcementLevel": "advisory"}}, True),
                       ({with_settings.name: {setting: wrong}}, False),
                       ({with_settings.name: {"no_such_setting": 1}}, False)):
        doc["config"]["gpufleet:policy"] = policy
        assert (problems(validator, doc) == []) is ok, policy


def test_an_extending_cluster_sets_only_what_it_overrides(validator: Draft202012Validator) -> None:
    override = {"config": {"aws:region": "us-west-2", "gpufleet:cluster": {
        "extends": "aws-train-p5", "region": "us-west-2", "network": {"zones": ["us-west-2a"]},
        "budget": {"max_hourly_usd": 900}, "prices": {"p5.48xlarge": {"spot": 30.0}},
    }}}
    assert problems(validator, override) == []


def test_an_extending_cluster_is_still_checked_for_names_and_types(validator: Draft202012Validator) -> None:
    for cluster in ({"extends": "aws-train-p5", "budgett": {}},
                    {"extends": "aws-train-p5", "budget": {"max_hourly_usd": "lots"}},
                    {"extends": ""}):
        assert problems(validator, {"config": {"gpufleet:cluster": cluster}}), cluster


def test_a_list_in_an_extending_file_is_written_whole(validator: Draft202012Validator) -> None:
    # Lists replace: a node group given without its name and types would have none after the merge.
    partial_group = {"extends": "aws-train-p5", "node_groups": [{"size": {"min": 0, "desired": 1, "max": 4}}]}
    assert problems(validator, {"config": {"gpufleet:cluster": partial_group}})
    whole = shipped("aws-train-p5")["config"]["gpufleet:cluster"]["node_groups"]
    whole_groups = {"extends": "aws-train-p5", "node_groups": whole}
    assert problems(validator, {"config": {"gpufleet:cluster": whole_groups}}) == []


def test_an_extending_image_stack_sets_only_what_it_overrides(validator: Draft202012Validator) -> None:
    for images, ok in (({"extends": "aws-images", "regions": ["us-east-1"]}, True),
                       ({"extends": "aws-images", "region": "us-east-1"}, False)):
        assert (problems(validator, {"config": {"gpufleet:images": images}}) == []) is ok, images


def test_a_fork_validates(validator: Draft202012Validator, stacks_dir: Path) -> None:
    result = CliRunner().invoke(app, ["fork", "aws-train-p5", "my-train", "--set", "name=my-train",
                                      "--set", "node_groups[0].size.max=32", "--set", "budget.max_hourly_usd=1800",
                                      "--stacks-dir", str(stacks_dir)])
    assert result.exit_code == 0, result.output
    forked = stack_path(stacks_dir, "my-train")
    assert MODELINE in forked.read_text(encoding="utf-8")  # the template's comment block carries it
    assert problems(validator, read_yaml(forked)) == []


def _properties(node: Any, where: str = "") -> list[tuple[str, Any]]:
    """Every property the schema declares (conditions of if/then left out: they declare nothing)."""
    found: list[tuple[str, Any]] = []
    if isinstance(node, dict):
        for name, spec in node.get("properties", {}).items():
            found.append((f"{where}.{name}", spec))
            found += _properties(spec, f"{where}.{name}")
        for key, value in node.items():
            if key not in ("properties", "if"):
                found += _properties(value, where)
    elif isinstance(node, list):
        for value in node:
            found += _properties(value, where)
    return found


def test_every_property_says_what_it_is() -> None:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    undescribed = [where for where, spec in _properties(schema) if isinstance(spec, dict) and "description" not in spec]
    assert undescribed == []


def test_a_network_field_takes_only_a_network(validator: Draft202012Validator) -> None:
    doc = shipped("aws-train-p5")
    doc["config"]["gpufleet:cluster"]["network"]["admin_cidrs"] = ["10.0.0.0/33"]
    assert any("does not match" in message for message in problems(validator, doc))
    doc["config"]["gpufleet:cluster"]["network"]["admin_cidrs"] = ["10.1.0.0/24"]
    assert problems(validator, doc) == []
