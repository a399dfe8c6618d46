"""Commands that do not plan start without Pulumi: neither the SDK, the policy SDK nor any provider SDK is imported
by `--help`, `catalog`, `quote`, `schema`, `policies` or `images check` (checked in a fresh interpreter each)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import REPO

HEAVY = ("pulumi", "pulumi_aws", "pulumi_azure_native", "pulumi_alicloud", "pulumi_policy", "pulumiverse_time")
PROBE = """
import json, runpy, sys
sys.argv = ["gpufleet", *sys.argv[1:]]
try:
    runpy.run_module("gpufleet", run_name="__main__")
except SystemExit:
    pass
sys.stderr.write("\\nLOADED " + json.dumps(sorted({m.split(".")[0] for m in sys.modules})) + "\\n")
"""


def loaded_roots(*args: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=REPO, capture_output=True, text=True, timeout=120)
    line = next(line for line in done.stderr.splitlines() if line.startswith("LOADED "))
    return set(json.loads(line.removeprefix("LOADED ")))


@pytest.mark.parametrize("args", [
    ("--help",), ("catalog",), ("quote", "--gpu", "H100", "--count", "16"), ("schema",), ("policies",),
    ("images", "check"),
])
def test_a_command_that_does_not_plan_loads_no_pulumi(args: tuple[str, ...]) -> None:
    assert loaded_roots(*args) & set(HEAVY) == set()


def test_plan_still_loads_the_sdk_and_its_cloud_only() -> None:
    loaded = loaded_roots("plan", "--stack", "aws-train-p5", "--format", "json")
    assert {"pulumi", "pulumi_aws", "pulumi_policy"} <= loaded
    assert not loaded & {"pulumi_azure_native", "pulumi_alicloud"}
