"""`gpufleet diff`: a git repository made in a temporary directory from this project's files, one commit
changing one node group's max, then the diff against HEAD~1; plus the comparison's rules (secrets masked,
null costs stay null) on plans the engine recorded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pulumi
import pulumi_aws as aws
import pytest
from conftest import REPO, read_cluster
from typer.testing import CliRunner

from gpufleet.catalog import load_catalog
from gpufleet.catalog.pricing import hourly_cost
from gpufleet.cli import app
from gpufleet.plan import batch, diff_refs
from gpufleet.plan.compare import SECRET, Side, diff_stack, secret_key
from gpufleet.plan.diff_refs import DiffReport, diff_against
from gpufleet.plan.engine import run_program
from gpufleet.plan.git_base import plan_in_tree
from gpufleet.plan.record import SHOW_SECRETS_ENV
from gpufleet.plan.secret_values import SECRET_DIGEST_ENV, digested
from gpufleet.report.diff_view import markdown_diff
from gpufleet.stackfile import SpecInvalid

STACK = "aws-train-p5"
ADDED, REMOVED = "aws-infer-copy", "azure-infer-a100"
DIGEST_KEY = b"a key drawn for one diff run"
PROJECT_FILES = (
    "gpufleet", "components", "policies", "images", "stacks", "Pulumi.yaml", "__main__.py", "pyproject.toml",
)


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false",
                           *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout


def group_size() -> dict[str, int]:
    return dict(read_cluster(STACK)["node_groups"][0]["size"])


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This project's files in a new repository; HEAD~1 as shipped, HEAD with the first node group of STACK
    4 nodes smaller at max, ADDED added (a copy of aws-infer-g6e) and REMOVED deleted."""
    root = tmp_path_factory.mktemp("repo")
    for name in PROJECT_FILES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, root / name)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "as shipped")
    stack_file = root / "stacks" / f"Pulumi.{STACK}.yaml"
    size = group_size()
    old = f"size: {{min: {size['min']}, desired: {size['desired']}, max: {size['max']}}}"
    text = stack_file.read_text()
    assert text.count(old) == 1, "the stack file's size line moved: update this fixture"
    stack_file.write_text(text.replace(old, old.replace(f"max: {size['max']}", f"max: {size['max'] - 4}")))
    shutil.copy2(root / "stacks" / "Pulumi.aws-infer-g6e.yaml", root / "stacks" / f"Pulumi.{ADDED}.yaml")
    (root / "stacks" / f"Pulumi.{REMOVED}.yaml").unlink()
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "smaller max")
    return root


@pytest.fixture(scope="module")
def base_sides(repo: Path) -> dict[str, Side]:
    """The base sides of `repo`'s stacks at HEAD~1, each planned once by the base's own code (a subprocess)."""
    return {}


@pytest.fixture
def base_planned_once(base_sides: dict[str, Side], monkeypatch: pytest.MonkeyPatch) -> None:
    """diff_against in this process takes each base side from `base_sides`, under one digest key: the tests that
    use it are about the work tree's side and the comparison, not the base planning again (test_the_base_plans_*)."""
    monkeypatch.setattr(diff_refs, "token_hex", lambda _: DIGEST_KEY.hex())

    def planned_once(tree: Path, stack: str, digest_key: str, stacks: Path) -> Side:
        if stack not in base_sides:
            base_sides[stack] = plan_in_tree(tree, stack, digest_key, stacks)
        return base_sides[stack]

    monkeypatch.setattr(diff_refs, "plan_in_tree", planned_once)


def gpufleet(repo: Path, *args: str, tmpdir: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it in that repository: its own `gpufleet`, found from the current directory."""
    env = {**os.environ, **({"TMPDIR": str(tmpdir)} if tmpdir else {})}
    return subprocess.run([sys.executable, "-m", "gpufleet", *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=600, check=False)


def test_a_smaller_max_is_that_one_input_and_its_gpu_and_cost_delta(repo: Path, tmp_path: Path) -> None:
    done = gpufleet(repo, "diff", "--base", "HEAD~1", "--stack", STACK, "--format", "json", tmpdir=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["base"]["ref"] == "HEAD~1" and report["exit_code"] == 0
    [stack] = report["stacks"]
    assert stack["status"] == "changed"
    assert stack["resources"]["added"] == [] and stack["resources"]["removed"] == []
    [changed] = stack["resources"]["changed"]
    assert changed["type"] == "aws:autoscaling/group:Group" and changed["options"] == []
    size = group_size()
    assert changed["inputs"] == [{"path": "maxSize", "kind": "changed", "before": size["max"],
                                  "after": size["max"] - 4}]

    p5 = load_catalog().get("aws", "p5.48xlarge")
    region = read_cluster(STACK)["region"]
    assert stack["gpus"]["max"]["delta"] == -4 * p5.gpu.count
    assert stack["gpus"]["desired"]["delta"] == 0 and stack["gpus"]["min"]["delta"] == 0
    expected = hourly_cost(p5, region, size["max"] - 4) - hourly_cost(p5, region, size["max"])
    assert stack["hourly_usd"]["max_on_demand"]["delta"] == pytest.approx(expected, abs=1e-4)
    assert stack["hourly_usd"]["desired_on_demand"]["delta"] == 0
    assert stack["violations"] == {"new": [], "fixed": []}
    assert list(tmp_path.iterdir()) == [], "the exported base tree was left behind"


def test_a_stack_on_one_side_only_is_added_or_removed_and_markdown_tells_all(repo: Path,
                                                                            base_planned_once: None) -> None:
    report = diff_against(repo, "HEAD~1", [STACK, ADDED, REMOVED])
    changed, added, removed = report.stacks
    assert (added.stack, added.status, added.before.state) == (ADDED, "added", "absent")
    assert added.changed == [] and added.removed == []
    assert {r["urn"] for r in added.added} == {r["urn"] for r in added.after.plan["resources"]}
    assert added.gpus["max"]["before"] == 0 and added.gpus["max"]["after"] == added.after.plan["summary"]["gpus"]["max"]
    assert (removed.stack, removed.status, removed.after.state) == (REMOVED, "removed", "absent")
    assert {r["urn"] for r in removed.removed} == {r["urn"] for r in removed.before.plan["resources"]}
    assert removed.before.exit_code in (0, 1) and removed.gpus["max"]["after"] == 0

    shown = markdown_diff(report)
    p5 = load_catalog().get("aws", "p5.48xlarge")
    delta = hourly_cost(p5, read_cluster(STACK)["region"], 4)
    assert changed.status == "changed" and f"(-{delta:.2f})" in shown
    assert "| \\~ | aws:autoscaling/group:Group | train-h100-asg | maxSize |" in shown
    assert f"| {ADDED} | added |" in shown and f"| {REMOVED} | removed |" in shown


def test_an_unknown_ref_exits_2_naming_it(repo: Path) -> None:
    done = gpufleet(repo, "diff", "--base", "no-such-branch")
    assert done.returncode == 2
    assert "--base: 'no-such-branch' names no commit" in done.stderr and "Traceback" not in done.stderr


def test_not_a_git_work_tree_is_invalid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    with pytest.raises(SpecInvalid, match="not in a git work tree"):
        diff_against(tmp_path, "HEAD")


def test_a_stack_on_neither_side_is_invalid(repo: Path) -> None:
    with pytest.raises(SpecInvalid, match="no stack 'nope' at HEAD"):
        diff_against(repo, "HEAD", ["nope"])


def test_stack_and_all_together_is_a_usage_error() -> None:
    result = CliRunner().invoke(app, ["diff", "--stack", STACK, "--all"])
    assert result.exit_code == 2 and "--stack NAME or --all, not both" in result.stderr


def test_the_base_plans_with_its_own_code_or_not_at_all(tmp_path: Path) -> None:
    """A tree without the project's packages: an install of the work tree would answer the import; refused."""
    (tmp_path / "stacks").mkdir()
    side = plan_in_tree(tmp_path, STACK)
    assert side.state == "error" and side.exit_code == 3
    assert f"exported tree {tmp_path.resolve()}" in (side.error or "")


def _recorded(value: Any) -> dict[str, Any]:
    """A plan as the engine records it, of one SSM parameter whose value is a Pulumi secret."""
    def program() -> None:
        aws.ssm.Parameter("p", type="SecureString", value=pulumi.Output.secret(value),
                          tags={"adminPassword": value, "secretName": "db"})

    resources = run_program(program, {}, project="gpufleet", stack="s", region="us-east-1", zones=["us-east-1a"])
    # As diff compares them: secrets as digests under the run's key, on both sides.
    return {"resources": [r.to_json(digest_key=DIGEST_KEY) for r in resources], "summary": {},
            "policies": {"violations": []}}


def test_plan_json_masks_secrets_unless_asked() -> None:
    def program() -> None:
        aws.ssm.Parameter("p", type="SecureString", value=pulumi.Output.secret("hunter2"))

    [parameter] = run_program(program, {}, project="gpufleet", stack="s", region="us-east-1", zones=["us-east-1a"])
    assert parameter.to_json()["inputs"]["value"] == SECRET
    assert "hunter2" in json.dumps(parameter.to_json(show_secrets=True))


def test_secrets_change_without_their_values() -> None:
    before, after = _recorded("hunter2"), _recorded("correct horse")
    result = diff_stack("s", Side("planned", 0, plan=before), Side("planned", 0, plan=after))
    [changed] = result.changed
    assert [(c.path, c.before, c.after) for c in changed.inputs] == [
        ('tags.adminPassword', SECRET, SECRET), ("value", SECRET, SECRET)]
    for shown in (json.dumps(result.to_json()), markdown_diff(DiffReport("b", "0" * 40, [result]))):
        assert "hunter2" not in shown and "correct horse" not in shown


@pytest.mark.parametrize("value", ["hunter2", "correct horse", "x"])
def test_the_compared_plans_carry_no_secret_in_clear(value: str) -> None:
    """What diff compares (and the base ref's planner prints across the process boundary) holds digests, equal for
    equal secrets under one key, different under another key or for another secret."""
    plan = _recorded(value)
    assert value not in json.dumps(plan)
    assert plan == _recorded(value) and plan != _recorded(value + "!")
    [parameter] = plan["resources"]
    assert parameter["inputs"]["value"].startswith("[secret:") and parameter["inputs"]["tags"]["adminPassword"] != value
    assert parameter["inputs"]["tags"]["secretName"] == "db"  # a name pointing at a secret is shown
    assert digested({"value": value, "token": value}, b"another key") != digested({"value": value, "token": value},
                                                                                   DIGEST_KEY)


def test_the_base_plan_runs_with_secrets_masked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The base ref's planner is never asked to show secrets: it gets a digest key, not GPUFLEET_SHOW_SECRETS."""
    from gpufleet.plan import git_base

    seen: dict[str, str] = {}

    def fake_run(*args: object, env: dict[str, str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        seen.update(env)
        return subprocess.CompletedProcess([], 2, "", "error: stop here")

    monkeypatch.setenv(SHOW_SECRETS_ENV, "1")
    monkeypatch.setattr(git_base.subprocess, "run", fake_run)
    git_base.plan_in_tree(tmp_path, STACK, "k" * 64)
    assert SHOW_SECRETS_ENV not in seen and seen[SECRET_DIGEST_ENV] == "k" * 64


def test_plan_json_under_a_digest_key_shows_no_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`gpufleet plan --format json` as the base side runs it: every secret-named input a digest, none in clear."""
    cluster = read_cluster(STACK)
    cluster["bootstrap"] = {**cluster.get("bootstrap", {}), "checkpoint_hook": "echo token"}
    monkeypatch.setenv(SECRET_DIGEST_ENV, "k" * 64)
    result = CliRunner().invoke(app, ["plan", "--stack", STACK, "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    found = [v for r in json.loads(result.stdout)["resources"] for k, v in _leaves(r["inputs"]) if secret_key(k)]
    assert all(isinstance(v, str) and v.startswith("[secret:") for v in found), found


def _leaves(value: Any, key: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [(k, v) for k, v in value.items()] + [x for k, v in value.items() for x in _leaves(v, k)]
    if isinstance(value, list):
        return [x for item in value for x in _leaves(item, key)]
    return []


def test_secret_names_are_credentials_not_references() -> None:
    assert all(map(secret_key, ["adminPassword", "client_secret", "sasToken", "privateKey", "keyMaterial"]))
    assert not any(map(secret_key, ["secretName", "kmsKeyId", "httpTokens", "sshPublicKey", "keyName"]))


def test_an_unpriced_side_is_unpriced_not_zero() -> None:
    summary = {"gpus": {"min": 0, "desired": 8, "max": 8},
               "hourly_usd": {"desired_on_demand": 0.0, "desired_expected": 0.0, "max_on_demand": 0.0},
               "unpriced": ["ecs.gn7i-c32g1.32xlarge in cn-wulanchabu"]}
    plan = {"resources": [], "summary": summary, "policies": {"violations": []}}
    result = diff_stack("s", Side("absent"), Side("planned", 0, plan=plan))
    assert result.hourly_usd["max_on_demand"] == {"before": 0, "after": None, "delta": None}
    assert result.gpus["max"] == {"before": 0, "after": 8, "delta": 8}


def test_violations_new_and_fixed_match_by_policy_urn_and_message() -> None:
    def plan(*messages: str) -> dict[str, Any]:
        return {"resources": [], "summary": {}, "policies": {"violations": [
            {"policy": "p", "level": "mandatory", "urn": "u", "message": m} for m in messages]}}

    result = diff_stack("s", Side("planned", 1, plan=plan("a", "b")), Side("planned", 1, plan=plan("b", "c")))
    assert [v["message"] for v in result.new_violations] == ["c"]
    assert [v["message"] for v in result.fixed_violations] == ["a"]



def test_an_invalid_work_tree_stack_exits_2_and_compares_nothing() -> None:
    plan = {"resources": [{"urn": "u", "type": "aws:ec2/vpc:Vpc", "inputs": {}}], "policies": {"violations": [
        {"policy": "p", "level": "advisory", "urn": "u", "message": "m"}]},
        "summary": {"gpus": {"min": 0, "desired": 8, "max": 8}, "hourly_usd": {"max_on_demand": 1.0}}}
    result = diff_stack("s", Side("planned", 0, plan=plan), Side("invalid", 2, error="size: needs min <= max"))
    assert result.status == "not planned"
    assert (result.removed, result.fixed_violations) == ([], [])
    assert result.gpus["max"] == {"before": 8, "after": None, "delta": None}
    report = DiffReport("b", "0" * 40, [result])
    assert report.exit_code == 2
    shown = markdown_diff(report)
    assert "work tree: invalid:\n\n```text\nsize: needs min <= max\n```" in shown
    assert "1.00 -\\> unknown" in shown


def test_the_work_tree_is_planned_in_workers_with_the_serial_runs_output(repo: Path, base_planned_once: None,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    names = [STACK, ADDED, REMOVED, "aws-images", "azure-images"]
    assert len([n for n in names if n != REMOVED]) >= batch.PARALLEL_FROM
    dispatched: list[str] = []
    real_dispatch = batch._dispatch

    def recording(pools, worker, last, queues, running, stacks_dir, digest_key) -> None:  # type: ignore[no-untyped-def]
        before = set(running.values())
        real_dispatch(pools, worker, last, queues, running, stacks_dir, digest_key)
        dispatched.extend(name for _, name in set(running.values()) - before)

    monkeypatch.setattr(batch, "_dispatch", recording)
    parallel = diff_against(repo, "HEAD~1", names, jobs=2)
    assert sorted(dispatched) == sorted(n for n in names if n != REMOVED), "the work tree was not handed to workers"
    dispatched.clear()
    serial = diff_against(repo, "HEAD~1", names, jobs=1)
    assert dispatched == []
    assert [s.stack for s in parallel.stacks] == names
    assert json.dumps(parallel.to_json()) == json.dumps(serial.to_json())
    assert markdown_diff(parallel) == markdown_diff(serial)
