"""No side doors: `extends` and `fork` read stacks from stacks/ only, a child stack carries the provider keys
the Pulumi CLI reads from its own file, and a fork that fails a mandatory rule says so and exits 1."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import SHIPPED_STACKS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from gpufleet import cli
from gpufleet.stackfile.read import read_config

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
CLUSTER_STACKS = ["aws-train-p5", "azure-train-ndh100", "alicloud-train-ebmgn8v"]

segment = st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True)


@st.composite
def escapes(draw: st.DrawFn) -> tuple[str, str]:
    """(a directory made to look like a stack, an `extends` value that walks from it out of stacks/)."""
    inside = draw(segment)
    ups = draw(st.integers(2, 4))
    sep = draw(st.sampled_from(["/", "//", "/./"]))
    return inside, f"{inside}{sep}" + "../" * ups + "outside/evil"


@pytest.fixture
def deep_stacks(tmp_path: Path) -> Path:
    """A copy of stacks/ deep enough that every walk out of it stays inside the test's own directory."""
    target = tmp_path / "a" / "b" / "c" / "stacks"
    shutil.copytree(SHIPPED_STACKS, target)
    return target


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli.app, list(args))
    return result.exit_code, result.output


def _plant(stacks_dir: Path, inside: str) -> None:
    (stacks_dir / f"Pulumi.{inside}").mkdir(exist_ok=True)
    for depth in range(2, 5):  # whatever the walk's length, an evil base waits where it lands
        outside = stacks_dir.joinpath(*[".."] * (depth - 1), "outside").resolve()
        outside.mkdir(parents=True, exist_ok=True)
        # A valid stack: only where it was read from is wrong.
        shutil.copy(stacks_dir / "Pulumi.aws-train-p5.yaml", outside / "evil.yaml")


@SETTINGS
@given(escapes())
def test_extends_cannot_leave_stacks(deep_stacks: Path, escape: tuple[str, str]) -> None:
    stacks_dir = deep_stacks
    inside, parent = escape
    _plant(stacks_dir, inside)
    child = stacks_dir / "Pulumi.child.yaml"
    child.write_text(f"config:\n  aws:region: us-east-1\n  gpufleet:cluster: {{extends: '{parent}'}}\n")
    code, output = _invoke("plan", "--stack", "child", "--stacks-dir", str(stacks_dir))
    assert code == 2 and "extends:" in output and "is not a stack name" in output, output


@SETTINGS
@given(escapes())
def test_fork_cannot_take_a_template_from_outside(deep_stacks: Path, escape: tuple[str, str]) -> None:
    stacks_dir = deep_stacks
    inside, template = escape
    _plant(stacks_dir, inside)
    code, output = _invoke("fork", template, "copy", "--stacks-dir", str(stacks_dir))
    assert code == 2 and not (stacks_dir / "Pulumi.copy.yaml").exists(), output


@pytest.mark.parametrize("base", [*CLUSTER_STACKS, "aws-images"])
def test_a_child_without_the_provider_keys_is_refused(stacks_dir: Path, base: str) -> None:
    keys = [k for k in read_config(stacks_dir / f"Pulumi.{base}.yaml") if not k.startswith("gpufleet:")]
    section = "gpufleet:images" if base.endswith("images") else "gpufleet:cluster"
    (stacks_dir / "Pulumi.child.yaml").write_text(f"config:\n  {section}: {{extends: {base}}}\n")
    code, output = _invoke("plan", "--stack", "child", "--stacks-dir", str(stacks_dir))
    assert keys and code == 2, output
    for key in keys:
        assert f"{key}: is set in '{base}' but not in this file" in output


@pytest.mark.parametrize("base", CLUSTER_STACKS)
def test_a_fork_failing_a_mandatory_rule_exits_1(stacks_dir: Path, base: str) -> None:
    code, output = _invoke("fork", base, "poor", "--set", "budget.max_hourly_usd=0.5", "--stacks-dir", str(stacks_dir))
    assert code == 1 and "fails mandatory policies: hourly-budget" in output, output
    assert (stacks_dir / "Pulumi.poor.yaml").is_file()


def test_readme_fork_example_with_its_budget_plans_clean(stacks_dir: Path) -> None:
    code, output = _invoke("fork", "aws-train-p5", "my-train", "--set", "name=my-train", "--set",
                           "node_groups[0].size.max=32", "--set", "budget.max_hourly_usd=1800",
                           "--stacks-dir", str(stacks_dir))
    assert code == 0, output


credential_names = st.sampled_from([
    "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID", "AZURE_CLIENT_SECRET", "ARM_CLIENT_SECRET",
    "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALICLOUD_SECRET_KEY", "PULUMI_ACCESS_TOKEN", "GITHUB_TOKEN",
    "GPUFLEET_API_TOKEN", "GPUFLEET_SECRET", "PYTHONPATH", "PYTHONSTARTUP", "LD_PRELOAD", "SSH_AUTH_SOCK",
])


@SETTINGS
@given(st.dictionaries(credential_names, st.text(alphabet="abcXYZ019+/=", max_size=8), min_size=1))
def test_diff_base_runs_the_ref_without_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     secrets: dict[str, str]) -> None:
    import subprocess

    from gpufleet.plan import git_base

    seen: dict[str, str] = {}

    def fake_run(*args: object, env: dict[str, str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        seen.update(env)
        return subprocess.CompletedProcess([], 2, "", "error: stop here")

    for name, value in {**secrets, "PATH": "/usr/bin", "LC_ALL": "C.UTF-8", "GPUFLEET_JOBS": "2"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(git_base.subprocess, "run", fake_run)
    git_base.plan_in_tree(tmp_path, "aws-train-p5")
    assert not set(secrets) & set(seen), sorted(set(secrets) & set(seen))
    assert {"PATH", "LC_ALL", "GPUFLEET_JOBS"} <= set(seen)


def test_diff_help_says_it_runs_the_refs_code() -> None:
    code, output = _invoke("diff", "--help")
    assert code == 0 and "BASE's code executes on this machine" in " ".join(output.split())
