"""`gpufleet lock resolve --help` and DESIGN.md's "Resolve" contract name the same options and kinds."""

from __future__ import annotations

import re

from cli_help import help_text, options
from conftest import REPO
from typer.testing import CliRunner

from gpufleet.cli import app

DESIGN = REPO.parent / "shared" / "DESIGN.md"


def test_help_and_the_design_contract_agree() -> None:
    contract = re.search(r"`gpufleet lock resolve ([^`]*)`", DESIGN.read_text())
    assert contract, "DESIGN.md has no `gpufleet lock resolve ...` line"
    promised = dict(re.findall(r"\[(--[\w-]+)(?: ([^\]]+))?\]", contract.group(1)))
    offered = options(help_text("lock", "resolve"))
    assert set(promised) <= set(offered), (promised, offered)
    kinds = promised["--only"].split("|")
    assert offered["--only"] == f"list[{'|'.join(kinds)}]"
    assert offered["--check"] == "bool"


def test_an_unknown_kind_or_profile_is_invalid_input() -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["lock", "resolve", "--only", "packages"]).exit_code == 2
    done = runner.invoke(app, ["lock", "resolve", "--profile", "nope"])
    assert done.exit_code == 2 and "--profile: unknown profile 'nope'" in done.output
