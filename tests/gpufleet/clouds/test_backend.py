"""A cloud's backend builds its stack-file models and checks on first use, and a stack is validated with its own
cloud's model alone: `quote` and a plan of one cloud never build the other clouds' pydantic models (issue 37).
Imports are read in a fresh interpreter, where nothing else has loaded them; the errors stay the union's."""

from __future__ import annotations

import copy
import json

import pytest
from conftest import read_cluster
from fresh_python import last_line

from gpufleet.clouds.registry import CLOUDS
from gpufleet.resolve import _cluster_adapter, resolve_cluster
from gpufleet.stackfile import SpecInvalid
from gpufleet.stackfile.validate import parse_with

MODELS = ("gpufleet.stackfile.models",
          *(f"gpufleet.clouds.{cloud}.{module}" for cloud in CLOUDS for module in ("stack_model", "checks")))


def loaded_after(code: str) -> list[str]:
    """The stack-file and cloud model and check modules loaded once `code` ran in a fresh interpreter."""
    shown = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in sys.modules if m in {MODELS!r})))\n"
    return json.loads(last_line(shown))


def test_looking_up_every_backend_builds_no_stack_model() -> None:
    code = ("from gpufleet.clouds.lookup import backend\n"
            "print([backend(c).fabric_group for c in ('aws', 'azure', 'alicloud')])")
    assert loaded_after(code) == []


def test_a_quote_builds_no_stack_model() -> None:
    code = ("from gpufleet.cli import app\n"
            "try:\n    app(['quote', '--gpu', 'H100', '--count', '16', '--format', 'json'])\n"
            "except SystemExit as done:\n    assert done.code == 0, done.code")
    assert loaded_after(code) == []


def test_resolving_an_aws_stack_builds_only_the_aws_models() -> None:
    code = ("from pathlib import Path\nfrom gpufleet.resolve import resolve_cluster\n"
            "from gpufleet.yaml_model import read_yaml\n"
            "resolve_cluster(read_yaml(Path('stacks/Pulumi.aws-train-p5.yaml'))['config']['gpufleet:cluster'])")
    assert loaded_after(code) == ["gpufleet.clouds.aws.checks", "gpufleet.clouds.aws.stack_model",
                                  "gpufleet.stackfile.models"]


def _union_errors(raw: dict) -> list[str]:
    with pytest.raises(SpecInvalid) as caught:
        parse_with(_cluster_adapter(), raw, CLOUDS)
    return [str(error) for error in caught.value.errors]


def _errors(raw: dict) -> list[str]:
    with pytest.raises(SpecInvalid) as caught:
        resolve_cluster(raw)
    return [str(error) for error in caught.value.errors]


@pytest.mark.parametrize("change", [
    {"netwrk": {}},  # an unknown field, with the closest one suggested
    {"node_groups": "many"},
    {"cloud": "gcp"},  # an unknown cloud: the union words it
    {"cloud": None},
])
def test_a_stack_validated_by_its_cloud_alone_has_the_union_errors(change: dict) -> None:
    raw = copy.deepcopy(read_cluster("aws-train-p5"))
    raw.update(change)
    if change.get("cloud") is None and "cloud" in change:
        raw.pop("cloud")
    expected = _union_errors(raw)
    assert expected  # the union refuses it
    assert _errors(raw)[:len(expected)] == expected
