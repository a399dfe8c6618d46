"""Commands that do not plan start without Pulumi: neither the SDK, the policy SDK nor any provider SDK is imported
by `--help`, `catalog`, `quote`, `schema`, `policies` or `images check` (checked in a fresh interpreter each)."""

from __future__ import annotations

import importlib
import io
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

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
sys.stderr.write("\\nLOADED " + json.dumps(sorted(sys.modules)) + "\\n")
"""


def loaded_modules(*args: str) -> set[str]:
    """Every module a fresh `gpufleet ARGS` process has imported when it ends."""
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=REPO, capture_output=True, text=True, timeout=120)
    line = next(line for line in done.stderr.splitlines() if line.startswith("LOADED "))
    return set(json.loads(line.removeprefix("LOADED ")))


def loaded_roots(*args: str) -> set[str]:
    return {module.split(".")[0] for module in loaded_modules(*args)}


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


def test_a_json_plan_loads_no_rich_console() -> None:
    """A machine's plan is written by the JSON writer alone: the consoles are made on first use."""
    loaded = loaded_modules("plan", "--stack", "aws-train-p5", "--format", "json")
    assert "pulumi_aws" in loaded
    assert not {module for module in loaded if module.split(".")[0] == "rich"}


def test_a_deferred_console_prints_and_takes_settings() -> None:
    """The console is made on its first use, with the options given; settings written to it reach it."""
    from gpufleet.cli.app import _console

    written = io.StringIO()
    console = _console(file=written, width=40, markup=False)
    console.width = 30
    console.print("[not markup] " + "word " * 10)
    lines = written.getvalue().splitlines()
    assert console.size.width == 30 and lines[0].rstrip() == "[not markup] word word word"  # wrapped at 30
    assert max(map(len, lines)) <= 30


def test_the_progress_bar_draws_on_a_terminal_through_a_deferred_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """rich's Live enters its console with `with`: the proxy forwards it."""
    cli_app = importlib.import_module("gpufleet.cli.app")  # the module (the package exports the Typer `app`)
    from gpufleet.cli.app import _console, progress

    drawn = io.StringIO()
    monkeypatch.setattr(cli_app, "err", _console(file=drawn, force_terminal=True, width=60))
    with progress(2) as advance:
        advance()
        advance()
    assert "planning" in drawn.getvalue() and "2/2" in drawn.getvalue()


def test_an_error_still_reaches_stderr_through_its_console() -> None:
    from typer.testing import CliRunner

    from gpufleet.cli import app

    result = CliRunner().invoke(app, ["plan", "--stack", "no-such-stack"])
    assert result.exit_code == 2 and "error: no stack 'no-such-stack'" in result.output


@pytest.mark.parametrize(("args", "unneeded"), [
    # reading stack files needs their config keys, not the stack models (pydantic builds of every cloud's)
    (("images", "check"), {"gpufleet.stackfile.models", "gpufleet.clouds.aws.stack_model"}),
    # the fork line reads every stack: only `quote --fork` needs it
    (("quote", "--gpu", "H100", "--count", "16"), {"gpufleet.quote_fork", "gpufleet.stackfile.read"}),
    # the cluster's schema: the image stack's model and checks belong to `schema --images`
    (("schema",), {"gpufleet.stackfile.image_stack"}),
])
def test_a_command_loads_only_what_it_uses(args: tuple[str, ...], unneeded: set[str]) -> None:
    assert loaded_modules(*args) & unneeded == set()


def test_images_check_reads_each_stack_file_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its problems and its notes come from one read of the stacks (parsing them is most of the command's time)."""
    from typer.testing import CliRunner

    from gpufleet import images_check
    from gpufleet.cli import app
    from gpufleet.stackfile import stack_names

    read: Counter[str] = Counter()
    load_stack = images_check.load_stack

    def counted(path: Path, *rest: Any) -> Any:
        read[path.name] += 1
        return load_stack(path, *rest)

    monkeypatch.setattr(images_check, "load_stack", counted)
    result = CliRunner().invoke(app, ["images", "check", "--format", "json", "--stacks-dir", str(REPO / "stacks")])
    assert result.exit_code in (0, 1) and json.loads(result.stdout)["lock"] == "images/lock.yaml", result.output
    assert read == Counter({f"Pulumi.{name}.yaml": 1 for name in stack_names(REPO / "stacks")})


ENTRY_POINT_GROUPS = """
import importlib.metadata, json, runpy, sys
asked = []
def entry_points(**selection):
    asked.append(selection.get("group"))
    return scan(**selection)
scan, importlib.metadata.entry_points = importlib.metadata.entry_points, entry_points
sys.argv = ["gpufleet", *sys.argv[1:]]
try:
    runpy.run_module("gpufleet", run_name="__main__")
except SystemExit:
    pass
sys.stderr.write("\\nASKED " + json.dumps(asked) + "\\n")
"""


def entry_point_groups_asked(env: dict[str, str]) -> list[str]:
    """The entry point groups a fresh `gpufleet catalog --format json` asks the installed distributions for (typer runs
    each option through a pydantic TypeAdapter, the first validator pydantic builds)."""
    done = subprocess.run([sys.executable, "-c", ENTRY_POINT_GROUPS, "catalog", "--format", "json"], cwd=REPO,
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stderr.splitlines() if line.startswith("ASKED "))
    return json.loads(line.removeprefix("ASKED "))


def test_pydantic_never_scans_the_installed_distributions_for_plugins_unless_the_user_says() -> None:
    """The scan read every distribution's metadata (~5 ms of each command) for plugins that have no business with the
    CLI's models; a user who names plugins to disable gets pydantic's own behaviour back."""
    env = {key: value for key, value in os.environ.items() if key != "PYDANTIC_DISABLE_PLUGINS"}
    assert "pydantic" not in entry_point_groups_asked(env)
    assert "pydantic" in entry_point_groups_asked({**env, "PYDANTIC_DISABLE_PLUGINS": "some-plugin"})
