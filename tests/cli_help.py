"""What `gpufleet ... --help` offers, read from click's plain help: each option and its value's label."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from gpufleet.cli import app

# An option line of click's plain help: `--name <type>`, `--name METAVAR`, or a flag alone.
OPTION = re.compile(r"^ +(--[\w-]+)(?: <([^>]*)>| ([A-Z][A-Z=_]*))?(?: {2,}|$)", re.M)


def help_text(*command: str) -> str:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, (command, result.output)
    return result.output


def options(help_output: str) -> dict[str, str]:
    """Each --option of a command's help and its value's label: `bool` for a flag, `a|b` for a choice."""
    return {name: typed or metavar or "bool" for name, typed, metavar in OPTION.findall(help_output)}
