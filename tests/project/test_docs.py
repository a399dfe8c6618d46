"""Layout rules a reader relies on: every repository path a doc or comment names exists; no Python file over
400 lines."""

from __future__ import annotations

import re
import subprocess

from conftest import REPO

# A path into one of the project's top-level folders; placeholders (<cloud>, NAME, *) are not checked.
PATH = re.compile(r"(?<![\w/.-])((?:components|policies|images|tests|stacks|examples)/[\w./-]*\w)")
PLACEHOLDER = re.compile(r"<|\*|\bNAME\b|\bNEW\b|/C/|/C\.|\{|/\.venv")
# A path inside another repository, written after its name (`Azure/azhpc-images components/x.sh`).
OTHER_REPO = re.compile(r"[\w.-]+/[\w.-]+ $")
TEXT = (".md", ".py", ".yaml", ".toml", ".sh", ".service")


MAX_LINES = 400


def tracked() -> list[str]:
    return subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()


def named_paths() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for name in tracked():
        if not name.endswith(TEXT) or name.startswith("tests/"):
            continue
        for line in (REPO / name).read_text(encoding="utf-8").splitlines():
            for match in PATH.finditer(line):
                if PLACEHOLDER.search(line[match.start(): match.end() + 2]) or OTHER_REPO.search(line[: match.start()]):
                    continue
                found.setdefault(match.group(1).rstrip("."), set()).add(name)
    return found


def test_every_named_path_exists() -> None:
    missing = {path: sorted(where) for path, where in named_paths().items() if not (REPO / path).exists()}
    assert missing == {}


def test_no_python_file_over_400_lines() -> None:
    long = {name: n for name in tracked() if name.endswith(".py")
            and (n := len((REPO / name).read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}
