"""Every command works on the user's project, found as Pulumi finds it (the nearest Pulumi.yaml upward from the
working directory, its stackConfigDir), never on the install folder's stacks; `--stacks-dir` names another."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import SHIPPED_STACKS
from typer.testing import CliRunner

from gpufleet import cli

TEAM = "config:\n  aws:region: us-east-1\n  gpufleet:cluster: {extends: aws-infer-g6e, name: team-a}\n"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli.app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's project outside the install folder: its own Pulumi.yaml, its stacks in stackConfigDir."""
    root = tmp_path / "platform"
    (root / "envs").mkdir(parents=True)
    (root / "Pulumi.yaml").write_text("name: platform\nruntime: python\nstackConfigDir: envs\n")
    shutil.copy(SHIPPED_STACKS / "Pulumi.aws-infer-g6e.yaml", root / "envs")
    (root / "envs" / "Pulumi.team-a.yaml").write_text(TEAM)
    (root / "docs").mkdir()
    return root


def test_plan_finds_the_project_from_a_subfolder_and_names_the_file(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project / "docs")
    code, stdout, _ = run("plan", "--stack", "team-a")
    assert code == 0
    assert stdout.splitlines()[0] == "stack file: ../envs/Pulumi.team-a.yaml"
    code, stdout, _ = run("plan", "--all", "--jobs", "1")
    assert code == 0 and [line.split()[0] for line in stdout.splitlines()] == ["aws-infer-g6e", "team-a"]


def test_stacks_sit_beside_the_project_file_without_stack_config_dir(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: p\nruntime: python\n")
    shutil.copy(SHIPPED_STACKS / "Pulumi.aws-infer-g6e.yaml", tmp_path)
    (tmp_path / "Pulumi.team-a.yaml").write_text(TEAM)
    monkeypatch.chdir(tmp_path)
    assert run("policy-config", "--stack", "team-a")[0] == 0


def test_outside_any_project_a_stack_command_says_how_to_proceed(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    for args in (["plan", "--stack", "aws-train-p5"], ["plan", "--all"], ["fork", "aws-train-p5", "x"],
                 ["policy-config", "--stack", "aws-train-p5"], ["preflight", "--stack", "aws-train-p5"],
                 ["diff"], ["images", "check"]):
        code, _, stderr = run(*args)
        assert code == 2, args
        assert "no Pulumi.yaml in" in stderr and "pass --stacks-dir FOLDER" in stderr, args
        assert "invalid stack" not in stderr
    assert run("catalog", "--format", "json")[0] == 0  # a command that reads no stack needs no project


def test_fork_into_another_folder_prints_next_steps_that_work(project: Path, tmp_path: Path, monkeypatch) -> None:
    elsewhere = tmp_path / "team-stacks"
    shutil.copytree(project / "envs", elsewhere)
    monkeypatch.chdir(project)
    code, stdout, _ = run("fork", "aws-infer-g6e", "team-b", "--set", "name=team-b", "--stacks-dir", str(elsewhere))
    assert code == 0 and (elsewhere / "Pulumi.team-b.yaml").is_file()
    steps = [line.strip() for line in stdout.splitlines() if line.startswith("  gpufleet")]
    assert [step.split()[1] for step in steps] == ["plan", "policy-config", "preflight"]
    assert all(f"--stacks-dir {elsewhere}" in step for step in steps)
    plan_step = steps[0].split()
    assert run(*plan_step[1:])[0] == 0  # the printed command, as the user would paste it
    code, stdout, _ = run("fork", "aws-infer-g6e", "team-c", "--set", "name=team-c")
    assert code == 0 and "  gpufleet plan --stack team-c\n" in stdout  # the project's own folder: no flag


def test_stack_file_extends_from_the_stacks_dir_given(project: Path, tmp_path: Path, monkeypatch) -> None:
    loose = tmp_path / "loose" / "Pulumi.team-a.yaml"
    loose.parent.mkdir()
    loose.write_text(TEAM)
    monkeypatch.chdir(tmp_path)
    code, _, stderr = run("plan", "--stack-file", str(loose), "--format", "json")
    assert code == 2 and "aws-infer-g6e" in stderr  # its base is not beside it
    assert run("plan", "--stack-file", str(loose), "--stacks-dir", str(project / "envs"), "--format", "json")[0] == 0


def test_diff_works_on_the_projects_stacks(project: Path, monkeypatch) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q", str(project)], check=True)
    subprocess.run([*git, "-C", str(project), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(project), "commit", "-qm", "base"], check=True)
    (project / "envs" / "Pulumi.team-a.yaml").write_text(TEAM.replace("name: team-a", "name: team-z"))
    monkeypatch.chdir(project / "docs")
    code, stdout, stderr = run("diff", "--stack", "team-a", "--format", "json")
    assert code == 0, stderr
    (entry,) = json.loads(stdout)["stacks"]
    assert entry["after"]["state"] == "planned"  # the project's stack in the work tree, not the install folder's
    # The base plans with the commit's own code (diff runs the ref's code); this project carries none, and says so.
    assert entry["before"]["state"] == "error" and "not from the exported tree" in entry["before"]["error"]
    outside = project.parent / "other-stacks"
    outside.mkdir()
    code, _, stderr = run("diff", "--stack", "team-a", "--stacks-dir", str(outside))
    assert code == 2 and "not in a git work tree" in stderr
