"""Input at fault is exit 2 naming the field, never an internal error (exit 3): generated names, --set paths and
values, policy maps, organisation dates, booleans and patterns (the classes the held-out fuzzer found)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import libyaml_files
import pytest
from conftest import SHIPPED_STACKS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from organisation_files import organisation_file
from test_depth import examples
from typer.testing import CliRunner

from gpufleet import cli
from gpufleet.stackfile.json_schema import stack_file_json_schema
from gpufleet.stackfile.pattern_words import PATTERN_WORDS
from gpufleet.yaml_model import read_yaml

FUZZ = settings(max_examples=examples(15, 3), deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
REGEX = re.compile(r"\\[SdDws]|\^|\$'|\{\d+,\d*\}|\[[^\]]*-[^\]]*\]")


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli.app, list(args))
    return result.exit_code, result.stdout, result.stderr


def child(stacks_dir: Path, name: str, body: str) -> None:
    (stacks_dir / f"Pulumi.{name}.yaml").write_text("config:\n  aws:region: us-east-1\n" + body)


@given(st.integers(min_value=256, max_value=1500))  # NAME_MAX is 255 on Linux file systems
@FUZZ
def test_a_name_too_long_for_the_file_system_is_exit_2(stacks_dir: Path, length: int) -> None:
    name = "a" * length
    child(stacks_dir, "longparent", f"  gpufleet:cluster: {{extends: {name}}}\n")
    # Names go through the stack-name rule (at most 100 characters) before any file system call; a file path the
    # file system cannot hold is named as such.
    for args, said in ((["plan", "--stack", name, "--stacks-dir", str(stacks_dir)], "error: no stack 'aaa"),
                       (["plan", "--stack-file", str(stacks_dir / f"{name}.yaml")], "File name too long"),
                       (["plan", "--stack", "longparent", "--stacks-dir", str(stacks_dir)], "at most 100"),
                       (["fork", name, "x", "--stacks-dir", str(stacks_dir)], "error: no stack 'aaa")):
        code, _, err = invoke(*args)
        assert code == 2, err
        assert said in err


scalar_fields = st.sampled_from(["name", "region", "node_groups[0].name", "node_groups[0].size.max", "tags.team"])
steps = st.sampled_from([".x", ".size", "[0]", "[3].a"])


@given(scalar_fields, steps)
@FUZZ
def test_fork_set_inside_a_value_that_is_not_a_map_or_list_is_exit_2(stacks_dir: Path, field: str, step: str) -> None:
    path = field + step
    code, _, err = invoke("fork", "aws-train-p5", "x", "--set", f"{path}=1", "--stacks-dir", str(stacks_dir))
    assert code == 2, err
    assert f"{path}:" in err and "cannot be set inside" in err
    assert not (stacks_dir / "Pulumi.x.yaml").exists()


@given(st.integers(min_value=0, max_value=10**12) | st.floats(allow_nan=False, allow_infinity=False) | st.booleans(),
       st.sampled_from(["cost-center", "team", "owner"]))
@FUZZ
def test_fork_set_of_a_tag_writes_the_text_the_tag_needs(stacks_dir: Path, number: object, key: str) -> None:
    text = json.dumps(number)
    target = stacks_dir / "Pulumi.tagged.yaml"
    target.unlink(missing_ok=True)
    code, _, err = invoke("fork", "aws-train-p5", "tagged", "--set", f"tags.{key}={text}", "--stacks-dir",
                          str(stacks_dir))
    assert code in (0, 1), err  # 1: the fork plans but a mandatory rule fails (said so)
    assert read_yaml(target)["config"]["gpufleet:cluster"]["tags"][key] == text


@pytest.mark.parametrize(("template", "setting", "key", "region"), [
    ("aws-train-p5", "region=us-west-2", "aws:region", "us-west-2"),
])
def test_fork_moving_the_region_moves_the_provider_key(
    stacks_dir: Path, template: str, setting: str, key: str, region: str
) -> None:
    child(stacks_dir, "middle", f"  gpufleet:cluster: {{extends: {template}}}\n")  # a fork of a fork
    code, _, err = invoke("fork", "middle", "moved", "--set", setting, "--set", f"network.zones=[{region}a]",
                          "--stacks-dir", str(stacks_dir))
    assert code in (0, 1), err
    assert read_yaml(stacks_dir / "Pulumi.moved.yaml")["config"][key] == region


not_a_map = st.lists(st.integers(), max_size=3) | st.integers() | st.text(min_size=1, max_size=8) | st.booleans()


@given(not_a_map)
@FUZZ
def test_a_policy_key_that_is_not_a_map_is_exit_2(stacks_dir: Path, value: object) -> None:
    child(stacks_dir, "pol", f"  gpufleet:policy: {json.dumps(value)}\n  gpufleet:cluster: {{extends: aws-train-p5}}\n")
    for command in ("policy-config", "plan"):
        code, _, err = invoke(command, "--stack", "pol", "--stacks-dir", str(stacks_dir))
        assert code == 2, err
        assert "gpufleet:policy" in err


@given(st.integers(min_value=2000, max_value=2100), st.integers(min_value=1, max_value=20),
       st.integers(min_value=1, max_value=40))
@FUZZ
def test_a_malformed_date_in_the_organisation_file_is_exit_2(tmp_path: Path, year: int, month: int, day: int) -> None:
    date = f"{year}-{month:02d}-{day:02d}"
    text = (f"exceptions:\n  - rule: hourly-budget\n    stacks: [x]\n    level: advisory\n"
            f"    reason: 'budget approved separately'\n    expires: {date}\n")
    with organisation_file(tmp_path, text):
        code, _, err = invoke("plan", "--stack", "aws-infer-g6e")
    try:
        valid = bool(__import__("datetime").date(year, month, day))
    except ValueError:
        valid = False
    assert code in ((0, 1) if valid else (2,)), err
    if not valid:
        assert "organisation.yaml" in err


@given(st.integers(min_value=-3, max_value=3) | st.sampled_from(["on", "off", "yes", "no", "0", "1", "true"]))
@FUZZ
def test_a_yes_no_field_takes_only_true_or_false(stacks_dir: Path, value: object) -> None:
    child(stacks_dir, "nv", f"  gpufleet:images:\n    extends: aws-images\n    nvswitch: {json.dumps(value)}\n")
    code, _, err = invoke("plan", "--stack", "nv", "--stacks-dir", str(stacks_dir))
    assert code == 2, err
    assert "nvswitch: must be true or false" in err


def _patterns() -> set[str]:
    found: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str):
                found.add(node["pattern"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(stack_file_json_schema())
    return found


def test_every_pattern_a_stack_field_takes_reads_as_words() -> None:
    assert _patterns() <= set(PATTERN_WORDS)


@given(st.sampled_from(["network.vpc_id", "network.security_group_id", "name", "storage.shared.mount"]),
       st.text(alphabet="!@ #%&*()\tZ", min_size=1, max_size=10))
@FUZZ
def test_a_value_off_pattern_is_told_in_words(stacks_dir: Path, field: str, value: str) -> None:
    *parents, last = field.split(".")
    section: dict = {"extends": "aws-train-p5"}
    node = section
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
    child(stacks_dir, "pat", "  gpufleet:cluster: " + json.dumps(section) + "\n")
    code, _, err = invoke("plan", "--stack", "pat", "--stacks-dir", str(stacks_dir))
    assert code == 2, err
    line = next(line for line in err.splitlines() if line.strip().startswith(f"{field}:"))
    assert not REGEX.search(line.split(":", 1)[1]), line


@given(st.integers(min_value=4, max_value=6))
@FUZZ
def test_too_many_zones_is_not_called_a_small_network(stacks_dir: Path, zones: int) -> None:
    names = [f"us-east-1{c}" for c in "abcdef"[:zones]]
    stack = libyaml_files.load((SHIPPED_STACKS / "Pulumi.aws-infer-g6e.yaml").read_text())
    cluster = stack["config"]["gpufleet:cluster"]
    network = {**cluster["network"], "zones": names}
    child(stacks_dir, "zones", "  gpufleet:cluster: " + json.dumps({"extends": "aws-infer-g6e", "network": network})
          + "\n")
    code, _, err = invoke("plan", "--stack", "zones", "--stacks-dir", str(stacks_dir))
    assert code == 2, err
    assert "too small" not in err and "list at most 3 zones" in err


@given(st.text(alphabet="xyz!-", min_size=1, max_size=8), st.integers(min_value=2, max_value=64))
@FUZZ
def test_every_error_of_one_file_is_reported_at_once(stacks_dir: Path, vpc_id: str, desired: int) -> None:
    group = {"name": "h100", "instance_types": ["p5.48xlarge"], "size": {"min": 0, "desired": desired, "max": 1}}
    section = {"extends": "aws-train-p5", "network": {"vpc_id": vpc_id}, "node_groups": [group]}
    child(stacks_dir, "both", "  gpufleet:cluster: " + json.dumps(section) + "\n")
    code, _, err = invoke("plan", "--stack", "both", "--stacks-dir", str(stacks_dir))
    assert code == 2, err
    assert "network.vpc_id: must be a VPC id" in err  # validation of the field
    assert "node_groups[0].size: needs min <= desired <= max" in err  # a check that runs on the validated spec
