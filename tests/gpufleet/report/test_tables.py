"""A fitted table picks the columns it hides by measuring the few rows that set each column's narrowest width, not
every row once per try (issue 37: `gpufleet policies` spent a third of its time measuring its table four times);
what it hides and prints is what measuring the whole table decides."""

from __future__ import annotations

import io
from unittest import mock

import pytest
from fresh_python import last_line
from rich.console import Console
from rich.measure import Measurement
from rich.text import Text

from gpufleet.report.tables import UNBOUNDED, FittedTable, table

COLUMNS = ["name", "level", "cloud", "types", "matches", "description"]
MINOR = ("matches", "types", "cloud")


def rule_table(rows: int) -> FittedTable:
    return table("rules", COLUMNS, [
        (f"rule-{i}" + "-x" * (i % 7), "advisory", "alicloud" if i % 3 else "aws",
         "\n".join(f"aws:ec2/type{j}:Type{j}" for j in range(i % 4)), "CIS 1.2." + "9" * (i % 5),
         " ".join(["word"] * (i % 9) + ["a-longer-word" * (i % 2)])) for i in range(rows)
    ], key=("name",), minor=MINOR)


def hidden_by_measuring_every_row(fitted: FittedTable, console: Console, width: int) -> tuple[str, ...]:
    unbounded = console.options.update_width(UNBOUNDED)
    for count in range(len(MINOR) + 1):
        hidden = MINOR[:count]
        if Measurement.get(console, unbounded, fitted._built(hidden, fitted.rows)).minimum <= width:
            return hidden
    return MINOR


@pytest.mark.parametrize("width", [40, 60, 70, 80, 90, 100, 120, 160])
def test_the_columns_hidden_are_those_measuring_every_row_hides(width: int) -> None:
    fitted = rule_table(40)
    console = Console(file=io.StringIO(), width=width)
    console.print(fitted)
    hidden = hidden_by_measuring_every_row(fitted, console, width)
    expected = Console(file=io.StringIO(), width=width)
    expected.print(fitted._built(hidden, fitted.rows))
    if hidden:
        expected.print(Text(f"({', '.join(hidden)} not shown at this width: widen the terminal, or --format json)",
                            style="dim"))
    assert console.file.getvalue() == expected.file.getvalue()


def test_printing_a_table_measures_each_cell_a_few_times_not_once_per_try() -> None:
    fitted, cells = rule_table(100), 100 * len(COLUMNS)
    measured = Text.__rich_measure__
    with mock.patch.object(Text, "__rich_measure__", autospec=True, side_effect=measured) as counted:
        Console(file=io.StringIO(), width=60).print(fitted)
    # Every minor column hidden at 60: four tries. Measuring the whole table at each try took 5.4 measures a cell.
    assert counted.call_count < 3 * cells


@pytest.mark.parametrize("command", [["quote", "--gpu", "H100", "--count", "16"], ["policies"], ["catalog"]])
def test_a_command_printing_a_table_loads_no_plan_readers(command: list[str]) -> None:
    # Issue 37: every command loaded the plan's review readers (report.review) with the tables and the secret
    # digests (plan.secret_values) with the plan record; only a plan's output reads them. In a fresh interpreter.
    code = (f"import sys\nfrom gpufleet.cli import app\ntry:\n    app({command!r})\nexcept SystemExit as done:\n"
            "    assert done.code == 0, done.code\n"
            "print(sorted(m for m in ('gpufleet.report.review', 'gpufleet.plan.secret_values') if m in sys.modules))")
    assert last_line(code) == "[]"
