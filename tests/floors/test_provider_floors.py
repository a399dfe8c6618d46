"""Each Pulumi distribution at the floor pyproject.toml allows plans every shipped stack that uses it exactly as the
installed release does, and the libraries only a real run calls (Azure's sign-in, Alibaba's metric rules) pass
their tests at theirs: `make floors` (CI runs it), not part of `make test`.

A user whose other projects hold a provider back gets the lowest release pip may pick. The floors were wrong once
(pulumi-aws 7.0, azure-native 3.0 and alicloud 3.80 each lacked names the components pass, and a plan stopped with an
internal error), and only a run under that release shows it: pip puts the floor in a folder of its own (--no-deps:
the rest stays as installed), first on PYTHONPATH, and the CLI plans each stack whose resources are of that
provider's package, in a process of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import tomllib
from conftest import REPO, SHIPPED_STACKS
from packaging.requirements import Requirement
from packaging.version import Version

from gpufleet.stackfile import stack_names

pytestmark = pytest.mark.floors

# The distributions the program registers resources with, and the package of their resource types ("" where every
# stack runs it: the SDK, the policy SDK the plan's checks run on).
PACKAGES = {
    "pulumi": "", "pulumi-policy": "", "pulumi-aws": "aws:", "pulumi-azure-native": "azure-native:",
    "pulumi-alicloud": "alicloud:", "pulumi-kubernetes": "kubernetes:", "pulumiverse-time": "time:",
}
# Libraries that only a real run calls (a plan never does), with the tests that run their paths.
RUN_TIME = {
    "azure-identity": ["tests/components/clouds/azure/test_azure_provider_credential.py"],  # 1.19: no subscription=
    "azure-core": ["tests/components/clouds/azure/test_azure_metric_seed.py",
                   "tests/components/clouds/azure/test_azure_provider_credential.py"],
    "cryptography": ["tests/components/clouds/azure/test_azure_identity_and_checks.py"],
    # The deploy seeds and writes Alibaba's metric rules with it, at the region's endpoint (its client's map)
    "alibabacloud-cms20190101": ["tests/components/clouds/alicloud/test_alicloud_custom_metric_rule.py"],
}
# What policies/stack_settings.DerivingServicer calls on the SDK's servicer.
SERVICER_CALLS = ("ConfigureStack", "Configure", "Analyze", "AnalyzeStack", "_get_enforcement_level")


def floor(distribution: str) -> str:
    """The lowest release pyproject.toml allows (its `>=` bound), in the dependencies or an extra."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    bounds = {spec.version for line in [*project["dependencies"], *sum(project["optional-dependencies"].values(), [])]
              if (requirement := Requirement(line)).name == distribution
              for spec in requirement.specifier if spec.operator == ">="}
    assert len(bounds) == 1, f"{distribution}: pyproject.toml gives {sorted(bounds) or 'no'} floors"
    return bounds.pop()


def run(argv: list[str], path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    if path is not None:
        env["PYTHONPATH"] = str(path)
    return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)


def plans(stacks: list[str], path: Path | None = None) -> dict[str, subprocess.CompletedProcess[str]]:
    argv = [sys.executable, "-m", "gpufleet", "plan", "--format", "json", "--stack"]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return dict(zip(stacks, pool.map(lambda stack: run([*argv, stack], path), stacks), strict=True))


@pytest.fixture(scope="module")
def installed() -> dict[str, subprocess.CompletedProcess[str]]:
    """Every shipped stack planned under the installed releases."""
    return plans(stack_names(SHIPPED_STACKS))


@pytest.fixture
def at_floor(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """A folder holding the distribution's floor release alone."""
    distribution = request.node.callspec.params["distribution"]
    # A wheel where the release has one (pulumiverse-time 0.1.1 is a source release only, as make installs it).
    done = run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile", "--prefer-binary",
                "--target", str(tmp_path), f"{distribution}=={floor(distribution)}"])
    assert done.returncode == 0, done.stderr
    return tmp_path


def assert_imported(distribution: str, at_floor: Path) -> None:
    version = run([sys.executable, "-c", f"import importlib.metadata as m; print(m.version({distribution!r}))"],
                  at_floor)
    assert Version(version.stdout.strip()) == Version(floor(distribution)), "the floor release was not the one imported"


@pytest.mark.parametrize("distribution", PACKAGES)
def test_every_stack_using_it_plans_the_same_at_the_floor(distribution: str, at_floor: Path, installed) -> None:
    assert_imported(distribution, at_floor)
    for stack, done in installed.items():
        assert done.returncode in (0, 1), f"{stack} under the installed releases: {done.stderr[-2000:]}"
    using = [stack for stack, done in installed.items()
             if any(r["type"].startswith(PACKAGES[distribution]) for r in json.loads(done.stdout)["resources"])]
    assert using, f"no shipped stack uses {distribution}"
    for stack, done in plans(using, at_floor).items():
        assert done.returncode == installed[stack].returncode, f"{stack}: {done.stderr[-2000:]}"
        assert done.stdout == installed[stack].stdout, f"{stack} plans otherwise at the floor {floor(distribution)}"


@pytest.mark.parametrize("distribution", RUN_TIME)
def test_the_tests_of_its_paths_pass_at_the_floor(distribution: str, at_floor: Path) -> None:
    assert_imported(distribution, at_floor)
    done = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *RUN_TIME[distribution]], at_floor)
    assert done.returncode == 0, done.stdout[-4000:]


@pytest.mark.parametrize("distribution", ["pulumi-policy"])
def test_the_packs_servicer_finds_what_it_calls_at_the_floor(distribution: str, at_floor: Path) -> None:
    """The pack (not the plan) calls the SDK servicer's methods; 1.18 served no ConfigureStack, which the pack
    derives its settings from."""
    probe = ("from pulumi_policy import policy\nimport policies.stack_settings\n"
             f"print([name for name in {SERVICER_CALLS!r} if not hasattr(policy._PolicyAnalyzerServicer, name)])")
    done = run([sys.executable, "-c", probe], at_floor)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
