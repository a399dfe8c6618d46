"""Tables for people never cut a value: at 80 and 120 columns, key columns (types, rule names) print whole on
one line, minor columns give way first and a line says which, messages and their fix commands are never cut, and
cells read as a person writes them (no Python None or list repr)."""

from __future__ import annotations

import importlib

import pytest
from typer.testing import CliRunner

from gpufleet import cli

# The shipped stacks' plans are made once (conftest.shipped_plan): these tests are about how the CLI prints them.
pytestmark = pytest.mark.usefixtures("shipped_plans_in_the_cli")
cli_app = importlib.import_module("gpufleet.cli.app")  # the module (the package exports the Typer `app`)

ELLIPSIS = "…"
COMMANDS = [
    ["plan", "--stack", "azure-train-ndh100"],
    ["plan", "--stack", "aws-train-eks"],
    ["policies"],
    ["quote", "--gpu", "H100", "--count", "16"],
    ["catalog"],
]


@pytest.fixture(autouse=True)
def _console_width_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    # A process reads COLUMNS when its console starts (rich fixes the width then); in this one process each case
    # sets the width itself, and the console follows COLUMNS again after the test.
    monkeypatch.setattr(cli_app.out, "_width", None)


def printed(args: list[str], columns: int) -> str:
    cli_app.out.width = columns
    result = CliRunner().invoke(cli.app, args, env={"COLUMNS": str(columns)})
    assert result.exit_code in (0, 1), result.output
    return result.stdout


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_nothing_is_cut_and_cells_read_as_written(args: list[str], columns: int) -> None:
    text = printed(args, columns)
    assert ELLIPSIS not in text
    assert max(len(line) for line in text.splitlines()) <= columns
    assert "None" not in text and "['" not in text


@pytest.mark.parametrize("columns", [80, 120])
def test_key_columns_print_whole_on_one_line(columns: int) -> None:
    lines = printed(["plan", "--stack", "azure-train-ndh100"], columns).splitlines()
    assert any("Standard_ND96isr_H100_v5" in line and "h100" in line for line in lines)
    lines = printed(["quote", "--gpu", "H100", "--count", "16"], columns).splitlines()
    assert any("p5.48xlarge" in line and "us-east-1" in line for line in lines)
    names = [line for line in printed(["policies"], columns).splitlines() if "aws-block-device-cmk-encryption" in line]
    assert names  # the longest rule names are one word on one line


def test_minor_columns_give_way_first_and_say_so() -> None:
    narrow = printed(["plan", "--stack", "azure-train-ndh100"], 80)
    assert "(interfaces not shown at this width: widen the terminal, or --format json)" in narrow
    wide = printed(["plan", "--stack", "azure-train-ndh100"], 200)
    assert "interfaces" in wide and "not shown at this width" not in wide


def test_policy_findings_keep_their_fix_commands_whole() -> None:
    text = printed(["plan", "--stack", "aws-train-eks"], 80)
    # Wrapped at spaces, never inside a word: the command reads back whole once the lines are joined.
    joined = " ".join(line.strip() for line in text.splitlines())
    assert "gpufleet images pin --stack aws-images-eks" in joined
    assert "aws ecr describe-images --region us-west-2 --registry-id 602401143452" in joined
