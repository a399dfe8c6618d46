"""Shared by the benchmarks: interleaved best-of-N process timings, instruction counts, and generated stacks.

The machine is shared (two cores here, other jobs running), so every ratio compares commands timed in the
same run, one after the other in each round, keeping each command's best round. Both wall time and CPU time
(user + system of the process and its threads) are kept: a plan is one process doing one thing at a time, so
its CPU time is the wall time it would take on an idle machine, and it is far less disturbed by other jobs.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from conftest import REPO, SHIPPED_STACKS

from gpufleet.yaml_model import read_yaml

PLAN = "from gpufleet.cli import main; main()"
# The CLI framework alone, loading nothing of gpufleet: typer running a two-command app (a command of four options
# that prints one line, or the app's --help). typer 0.29 converts every option through a pydantic TypeAdapter, so
# running a command with options loads pydantic. A table is printed by rich, as gpufleet's tables are; `--format json`
# prints with the standard library and loads no renderer, as gpufleet's JSON paths do.
FRAMEWORK = '''
import enum, json, sys
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(help="An app of two commands.", no_args_is_help=True, add_completion=False)


class Format(str, enum.Enum):
    table = "table"
    json = "json"


@app.command()
def command(
    name: Annotated[str | None, typer.Option("--name", help="A name.")] = None,
    count: Annotated[int, typer.Option("--count", help="A count.")] = 1,
    fmt: Annotated[Format, typer.Option("--format", help="table or json.")] = Format.table,
    where: Annotated[Path, typer.Option("--dir", help="A directory.")] = Path("."),
) -> None:
    """A command that prints one line."""
    if fmt is Format.json:
        print(json.dumps({"name": name, "count": count, "dir": str(where)}, indent=2))
    else:
        from rich.console import Console

        Console().print(f"{name} {count} {fmt.value} {where}")


@app.command()
def other() -> None:
    """Another command."""


app(sys.argv[1:], prog_name="app")
'''

REPLAY = Path(__file__).with_name("sdk_replay.py")  # the SDK alone registering a recorded plan's resources


def replayed(first: str = "") -> str:
    """A process that runs `first` (Python source), then sdk_replay.py with the process's three arguments. The collector
    is off from the first line and the objects frozen at exit, as in a gpufleet command."""
    return ("import atexit, gc, runpy, sys\ngc.disable()\natexit.register(gc.freeze)\n"
            "replay = [sys.argv[1], sys.argv[2], sys.argv[3]]\n" + first
            + "sys.argv = replay\nrunpy.run_path(sys.argv[0], run_name='__main__')\n")


REPLAYED = replayed()
# The floor as a CLI reaches it: one process that runs the framework's command, then the SDK registering the plan's
# resources. What the two load alike (~100 modules of the standard library: importlib.metadata and email, dataclasses,
# hashlib, traceback and more) is loaded once, as in a plan: the framework beside the SDK costs 0.03-0.10 s where
# it costs 0.12-0.13 s alone, and a floor that added the two apart counted that difference twice (2026-11-29).
WITH_FRAMEWORK = replayed(f"""sys.argv = ["app", "command", "--name", "x", "--format", "json"]
try:
    exec(compile({FRAMEWORK!r}, "framework", "exec"))
except SystemExit:
    pass
""")


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float

    def over(self, floor: Timing) -> Timing:
        return Timing(self.wall / floor.wall, self.cpu / floor.cpu)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@functools.cache
def compiled_once() -> dict[str, str]:
    """The environment the timed processes run in: every module's bytecode cached after its first import, in a
    directory of its own (never in the checkout), as on an installed machine. Where PYTHONDONTWRITEBYTECODE is set,
    the project's own modules would be compiled from source in every process while the installed libraries load
    theirs from the bytecode pip wrote: the project would be timed compiling, its baselines not."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="gpufleet-bench-pycache-")
    atexit.register(shutil.rmtree, env["PYTHONPYCACHEPREFIX"], ignore_errors=True)
    return env


def instructions(argv: list[str]) -> int:
    """The instructions `argv` executes, its threads and all, once its bytecode is cached: counted by valgrind's
    cachegrind without simulating caches (the count callgrind collects, in three quarters of its time). For the same
    programs, inputs and libraries it moves by under 1% (hash seeds, threads), however busy the machine is."""
    assert shutil.which("valgrind"), "valgrind not found: install it (Debian's valgrind) to count instructions"
    env = compiled_once()
    subprocess.run(argv, cwd=REPO, env=env, capture_output=True, check=True)
    counted = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null", *argv],
        cwd=REPO, env=env, capture_output=True, text=True, check=True)
    refs = re.search(r"I\s+refs:\s+([\d,]+)", counted.stderr)
    assert refs, f"cachegrind printed no count: {counted.stderr[-500:]}"
    return int(refs.group(1).replace(",", ""))


def best_of(commands: dict[str, list[str]], runs: int) -> dict[str, Timing]:
    """Each command's best wall and best CPU time over `runs` rounds, the commands interleaved in every round; a
    first untimed round compiles and caches every process's bytecode."""
    env = compiled_once()
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    for argv in commands.values():
        subprocess.run(argv, cwd=REPO, check=False, capture_output=True, env=env)
    for _ in range(runs):
        for name, argv in commands.items():
            cpu, start = _children_cpu(), time.perf_counter()
            subprocess.run(argv, cwd=REPO, check=False, capture_output=True, env=env)
            walls[name].append(time.perf_counter() - start)
            cpus[name].append(_children_cpu() - cpu)
    return {name: Timing(min(walls[name]), min(cpus[name])) for name in commands}


def python(code: str, *args: str) -> list[str]:
    return [sys.executable, "-c", code, *args]


def gpufleet(*args: str) -> list[str]:
    return python(PLAN, *args)


def group_stack(directory: Path, groups: int) -> str:
    """Stack `gN` in `directory`: aws-train-p5 with N p5 node groups (small sizes, one budget for all)."""
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copy(SHIPPED_STACKS / "Pulumi.aws-train-p5.yaml", directory)
    entries = "".join(
        f"      - {{name: g{i}, instance_types: [p5.48xlarge], size: {{min: 0, desired: 1, max: 2}}, "
        "capacity: spot, rdma: required}\n"
        for i in range(groups)
    )
    name = f"g{groups}"
    (directory / f"Pulumi.{name}.yaml").write_text(
        "config:\n  aws:region: us-east-1\n  gpufleet:cluster:\n    extends: aws-train-p5\n"
        f"    name: {name}\n    node_groups:\n{entries}    budget: {{max_hourly_usd: 100000}}\n"
    )
    return name


def forked_stacks(directory: Path, count: int) -> list[str]:
    """`count` stacks in `directory`: the shipped ones, then forks of the cluster stacks (renamed clusters, with
    their template's provider settings, which the Pulumi CLI reads from a stack's own file only)."""
    shutil.copytree(SHIPPED_STACKS, directory)
    names = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in directory.glob("Pulumi.*.yaml"))
    configs = {name: read_yaml(directory / f"Pulumi.{name}.yaml")["config"] for name in names}
    clusters = [name for name in names if "gpufleet:cluster" in configs[name]]
    for index in range(count - len(names)):
        template = clusters[index % len(clusters)]
        fork = f"fork{index:02d}-{template}"
        provider = {key: value for key, value in configs[template].items() if not key.startswith("gpufleet:")}
        config = {**provider, "gpufleet:cluster": {"extends": template, "name": f"fork{index:02d}"}}
        (directory / f"Pulumi.{fork}.yaml").write_text(json.dumps({"config": config}))
        names.append(fork)
    return sorted(names)
