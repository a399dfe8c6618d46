"""Plan stacks as they were at a git ref: the ref's tree exported to a temporary directory (its code, its
stacks, its lock and catalog: a change's effect includes code changes) and planned there by the ref's own
`gpufleet` package (`components` in refs older than it), in a subprocess of this interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from ..stackfile import SpecError, SpecInvalid, stack_names
from .compare import Side
from .secret_values import SECRET_DIGEST_ENV

EXIT_CLEAN, EXIT_POLICY, EXIT_INVALID = 0, 1, 2
PLAN_TIMEOUT_S = 600

# Run in the export (the directory is first on sys.path with `-c`): its CLI, checking before and after that
# every module of the project's packages came from the export, not from an install of the work tree (an
# editable install answers for a package the ref lacks) or PYTHONPATH. A stray module exits 3.
_RUN_EXPORTED_CLI = """
import os, runpy, sys
root = os.path.realpath(os.getcwd()) + os.sep

def check():
    strays = sorted(name for name, module in list(sys.modules.items())
                    if name.split(".")[0] in ("gpufleet", "components", "policies", "images")
                    and not os.path.realpath(getattr(module, "__file__", None) or root).startswith(root))
    if strays:
        sys.stderr.write(f"the base plan imported {strays[0]} from {sys.modules[strays[0]].__file__}, "
                         f"not from the exported tree {root}\\n")
        sys.exit(3)

# The command is the gpufleet package's; refs older than the package ran it from components.
cli = "gpufleet" if os.path.isfile(os.path.join(root, "gpufleet", "__main__.py")) else "components"
try:
    __import__(cli)
except ImportError as exc:
    sys.stderr.write(f"the exported tree {root} has no importable {cli} package: {exc}\\n")
    sys.exit(3)
check()
sys.argv = ["gpufleet", *sys.argv[1:]]
try:
    runpy.run_module(cli, run_name="__main__", alter_sys=True)
finally:
    check()
"""


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)


def resolve_ref(repo: Path, ref: str) -> str:
    """The commit `ref` names in the git repository holding `repo`; SpecInvalid (exit 2) when `repo` is
    not in a git work tree or `ref` names no commit."""
    if ref.startswith("-"):
        raise SpecInvalid([SpecError("--base", f"{ref!r} is not a git ref")])
    inside = _git(repo, "rev-parse", "--is-inside-work-tree")
    if inside.returncode != 0 or inside.stdout.strip() != b"true":
        raise SpecInvalid([SpecError("--base", f"{repo} is not in a git work tree: no base to compare with")])
    found = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if found.returncode != 0:
        raise SpecInvalid([SpecError("--base", f"{ref!r} names no commit in this repository")])
    return found.stdout.decode().strip()


@contextmanager
def exported_tree(repo: Path, commit: str) -> Iterator[Path]:
    """The project directory (the one holding Pulumi.yaml) as it was at `commit`, in a temporary
    directory removed on exit whatever happens."""
    prefix = _git(repo, "rev-parse", "--show-prefix").stdout.decode().strip()
    with tempfile.TemporaryDirectory(prefix="gpufleet-base-") as tmp:
        archive = Path(tmp) / "base.tar"
        done = _git(repo, "archive", "--format=tar", f"--output={archive}", commit)
        if done.returncode != 0:
            raise SpecInvalid([SpecError("--base", f"git archive {commit} failed: {done.stderr.decode().strip()}")])
        tree = Path(tmp) / "tree"
        with tarfile.open(archive) as tar:
            # git's own tree; the "tar" filter (where this Python has filters) still refuses paths out of it
            tar.extractall(tree, **({"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}))
        archive.unlink()
        yield tree / prefix


def base_stacks(tree: Path, stacks: Path = Path("stacks")) -> list[str]:
    """The stacks of the exported project, in its stack folder `stacks` (relative to the project)."""
    return stack_names(tree / stacks) if (tree / stacks).is_dir() else []


# What an offline plan needs from the caller's environment; everything else (cloud credentials, tokens, the
# caller's PYTHONPATH) stays behind, since the ref's code is whatever that commit says.
KEPT_ENV = ("PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT", "VIRTUAL_ENV",
            "PYTHONHASHSEED", "PYTHONUTF8", "PYTHONIOENCODING", "PYTHONDONTWRITEBYTECODE")
SECRET_WORDS = ("SECRET", "TOKEN", "PASSWORD", "CREDENTIAL", "KEY", "AUTH")


def planning_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment a ref's plan runs with: the allow-list above, locale (LC_*), and GPUFLEET_* settings
    whose names do not look like secrets."""
    def kept(name: str) -> bool:
        upper = name.upper()
        if upper in KEPT_ENV or upper.startswith("LC_"):
            return True
        return upper.startswith("GPUFLEET_") and not any(word in upper for word in SECRET_WORDS)

    return {k: v for k, v in environ.items() if kept(k)}


def plan_in_tree(tree: Path, stack: str, digest_key: str | None = None, stacks: Path = Path("stacks")) -> Side:
    """Plan STACK with the exported tree's own code, as `gpufleet plan --stack STACK --format json` there.
    That code runs here: it gets the scrubbed environment of `planning_environment`, never credentials, and
    prints secrets masked, or as digests under `digest_key` (secret_values: compared here, never in clear)."""
    env = planning_environment(os.environ)
    if digest_key is not None:
        env[SECRET_DIGEST_ENV] = digest_key
    done = subprocess.run(
        [sys.executable, "-c", _RUN_EXPORTED_CLI, "plan", "--stack", stack, "--format", "json",
         "--stacks-dir", str(tree / stacks)],
        cwd=tree, env=env, capture_output=True, text=True, timeout=PLAN_TIMEOUT_S, check=False,
    )
    message = done.stderr.strip().removeprefix("error: ")
    if done.returncode in (EXIT_CLEAN, EXIT_POLICY):
        try:
            return Side("planned", done.returncode, plan=json.loads(done.stdout))
        except json.JSONDecodeError as exc:
            return Side("error", done.returncode, error=f"its plan is not JSON ({exc}); stderr: {message}")
    if done.returncode == EXIT_INVALID:
        return Side("invalid", done.returncode, error=message)
    return Side("error", done.returncode, error=message or f"the planner exited {done.returncode}")
