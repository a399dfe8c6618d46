"""What every `gpufleet` command shares: the Typer apps, the two consoles, output formats and input errors.

Every command module imports what it works with inside its command function: importing the CLI (for --help,
or for a command that only reads the catalog) must not load the stack models, the engine or the Pulumi SDKs.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from lazy_object_proxy import Proxy

from .json_output import json_text

if TYPE_CHECKING:
    from rich.console import Console

    from ..stackfile import SpecInvalid

app = typer.Typer(
    help="GPU clusters on AWS, Azure and Alibaba Cloud: plan offline, check policies and image pins. "
    "Exit status: 0 clean, 1 a mandatory policy failed, 2 invalid input, 3 an internal error "
    "(add --debug anywhere for its traceback).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # Plain help, as click prints it: rich's panels read help text as markup (`[secret]` vanished) and label every
    # flag `<bool>`.
    rich_markup_mode=None,
)
images_app = typer.Typer(help="Pinned CUDA driver images (images/lock.yaml).", no_args_is_help=True,
                         rich_markup_mode=None)
app.add_typer(images_app, name="images")
lock_app = typer.Typer(help="Facts the image lock needs, read from their sources.", no_args_is_help=True,
                       rich_markup_mode=None)
app.add_typer(lock_app, name="lock")



def _version(shown: bool) -> None:
    if shown:
        from importlib.metadata import version

        out.print(f"gpufleet {version('gpufleet')}", highlight=False)
        raise typer.Exit(0)


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                 help="Print the version and exit.")] = False) -> None:
    """GPU clusters on AWS, Azure and Alibaba Cloud: plan offline, check policies and image pins."""


def _console(**options: Any) -> Console:
    """A rich Console made on first use (lazy-object-proxy forwards every attribute and special method to it): a
    command that writes JSON (a plan's, the commands' --format json) never loads rich's console, ~40 modules."""

    def made() -> Console:
        from rich.console import Console

        return Console(**options)

    return cast("Console", Proxy(made))


out = _console()
# Errors quote user text (field values, stack names): never read as rich markup or :emoji: codes.
err = _console(stderr=True, markup=False, emoji=False, highlight=False, soft_wrap=True)
StacksDir = Annotated[Path | None, typer.Option(
    "--stacks-dir", help="Folder of the Pulumi.<stack>.yaml files (default: the project's, found as Pulumi finds it: "
    "the nearest Pulumi.yaml from here upward, and its stackConfigDir).")]


class Format(str, Enum):
    table = "table"
    json = "json"


FormatOpt = Annotated[Format, typer.Option("--format", help="table for people, json for machines.")]


class ReportFormat(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"
    sarif = "sarif"


ReportFormatOpt = Annotated[ReportFormat, typer.Option(
    "--format",
    help="table for people, json for machines (the plan document), markdown for pull requests (job summary, PR "
    "comment), sarif (SARIF 2.1.0) for code scanning. The exit status is the same in every format.",
)]


def emit_json(data: Any) -> None:
    sys.stdout.write(json_text(data))


def fail_invalid(invalid: SpecInvalid) -> None:
    err.print(f"error: {invalid}")
    raise typer.Exit(2)


def project_stacks(given: Path | None) -> Path:
    """`--stacks-dir` when given, else the stack folder of the project the working directory is in; exit 2 when
    there is none."""
    from ..project import stacks_dir
    from ..stackfile import SpecInvalid

    try:
        return stacks_dir(given)
    except SpecInvalid as invalid:  # no stack is read yet: the usage error alone, not "invalid stack"
        for error in invalid.errors:
            err.print(f"error: {error.path}: {error.message}")
        raise typer.Exit(2) from None


def existing_stack(stacks_dir: Path, name: str) -> Path:
    """The file of stack NAME in stacks_dir, or exit 2 naming the stacks that exist."""
    from ..stackfile import stack_names, stack_path
    from ..stackfile.read import STACK_NAME

    path = stack_path(stacks_dir, name) if STACK_NAME.fullmatch(name) else None
    if path is None or not path.is_file():
        err.print(f"error: no stack {name!r} in {stacks_dir}; known: {', '.join(stack_names(stacks_dir))}")
        raise typer.Exit(2)
    return path


@contextmanager
def progress(total: int) -> Iterator[Callable[[], None]]:
    """A progress bar on stderr when it is a terminal (and only then: CI logs get the lines alone); yields the
    function that marks one more item done."""
    if not err.is_terminal:
        yield lambda: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("planning"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        # Lines go to stdout: through the bar when stdout is the same terminal, straight to a pipe otherwise.
        console=err, transient=True, redirect_stdout=out.is_terminal, redirect_stderr=False,
    ) as bar:
        task = bar.add_task("stacks", total=total)
        yield lambda: bar.advance(task)
