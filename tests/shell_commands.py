"""The external commands a bash script runs, read from shfmt's syntax tree (mvdan/sh, the parser shfmt formats with).

shfmt-py (a dev dependency) puts the shfmt binary beside the interpreter. `shfmt --to-json` prints the script's
syntax tree; every simple command (CallExpr) whose first word is a literal names what runs, unless the script
defines it as a function or it is a bash builtin or keyword. Wrappers that run their arguments (exec, timeout,
command without -v) are looked through. Words built at run time ("poll_$GPUFLEET_CLOUD") are reported apart, so a
test can require them to resolve to the script's own functions.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# bash builtins and keywords the node and install scripts use (bash(1), SHELL BUILTIN COMMANDS): never on PATH.
BUILTINS = frozenset({
    ".", ":", "[", "[[", "break", "cd", "continue", "declare", "echo", "eval", "exit", "export", "false", "local",
    "printf", "read", "readonly", "return", "set", "shift", "source", "test", "trap", "true", "type", "wait",
    "mapfile", "unset", "let", "shopt", "pushd", "popd", "getopts", "hash", "ulimit", "umask", "builtin",
})
# Commands that run their arguments as a command: (name, how many leading words of their own to skip).
WRAPPERS = {"exec": 0, "command": 0, "timeout": 1, "nohup": 0, "env": 0}


@dataclass
class Commands:
    """What one script runs."""

    external: set[str] = field(default_factory=set)
    functions: set[str] = field(default_factory=set)
    dynamic: list[str] = field(default_factory=list)
    """First words that are not literal (their shell source), e.g. poll_$GPUFLEET_CLOUD."""


def shfmt() -> str:
    beside = Path(sys.executable).parent / "shfmt"
    found = str(beside) if beside.exists() else shutil.which("shfmt")
    assert found, "shfmt not found (pip install shfmt-py)"
    return found


def syntax_tree(script: str) -> dict[str, Any]:
    done = subprocess.run([shfmt(), "--to-json", "-ln", "bash"], input=script, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _literal(word: dict[str, Any]) -> str | None:
    """The word's text when it is a plain or quoted literal, else None."""
    text = []
    for part in word.get("Parts", []):
        if part.get("Type") == "Lit":
            text.append(part["Value"])
        elif part.get("Type") in ("SglQuoted",):
            text.append(part["Value"])
        elif part.get("Type") == "DblQuoted" and all(p.get("Type") == "Lit" for p in part.get("Parts", [])):
            text.extend(p["Value"] for p in part.get("Parts", []))
        else:
            return None
    return "".join(text)


def _nodes(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _nodes(value)
    elif isinstance(node, list):
        for item in node:
            yield from _nodes(item)


def _command_name(args: list[dict[str, Any]], script: str) -> tuple[str | None, str | None]:
    """(literal name, dynamic source) of what a CallExpr runs, looking through wrappers."""
    index = 0
    while index < len(args):
        name = _literal(args[index])
        if name is None:
            start, end = args[index]["Pos"]["Offset"], args[index]["End"]["Offset"]
            return None, script.encode()[start:end].decode()  # shfmt's offsets count bytes
        if name == "command" and index + 1 < len(args) and _literal(args[index + 1]) in ("-v", "-V"):
            return None, None  # a lookup, not a run
        if name in WRAPPERS:
            index += 1 + WRAPPERS[name]
            while index < len(args) and (_literal(args[index]) or "").startswith("-"):
                index += 1
            continue
        return name, None
    return None, None


def commands(script: str) -> Commands:
    """Every command `script` runs, split into external ones, its own functions and run-time names."""
    tree = syntax_tree(script)
    found = Commands()
    calls = []
    for node in _nodes(tree):
        if node.get("Type") == "FuncDecl":
            found.functions.add(node["Name"]["Value"])
        elif node.get("Type") == "CallExpr" and node.get("Args"):
            calls.append(node["Args"])
    for args in calls:
        name, dynamic = _command_name(args, script)
        if dynamic is not None:
            found.dynamic.append(dynamic)
        elif name is not None and name not in BUILTINS and name not in found.functions:
            found.external.add(name)
    return found


def _cloud_test(cond: list[dict[str, Any]]) -> str | None:
    """The cloud an `if [[ $GPUFLEET_CLOUD == X ... ]]` condition requires (its left-most == test), else None."""
    if len(cond) != 1 or cond[0].get("Cmd", {}).get("Type") != "TestClause":
        return None
    test = cond[0]["Cmd"]["X"]
    while test.get("Type") == "BinaryTest" and test.get("Op") == "&&":
        test = test["X"]
    if test.get("Type") != "BinaryTest" or test.get("Op") != "==":
        return None
    parts = test["X"].get("Parts", [])
    if len(parts) == 1 and parts[0].get("Type") == "ParamExp" and parts[0]["Param"]["Value"] == "GPUFLEET_CLOUD":
        return _literal(test["Y"])
    return None


def _walk(node: Any, cloud: str) -> Iterator[dict[str, Any]]:
    """Nodes that run on `cloud`: branches that test GPUFLEET_CLOUD for another cloud are left out."""
    if isinstance(node, list):
        for item in node:
            yield from _walk(item, cloud)
        return
    if not isinstance(node, dict):
        return
    if node.get("Type") == "FuncDecl":
        return  # a body runs only where it is called
    if node.get("Type") == "IfClause" and _cloud_test(node.get("Cond", [])) not in (None, cloud):
        yield from _walk(node.get("Else"), cloud)
        return
    yield node
    for value in node.values():
        yield from _walk(value, cloud)


def node_commands(scripts: list[str], cloud: str, settings: Mapping[str, str] | None = None,
                  ) -> tuple[set[str], list[str]]:
    """External commands that `scripts` (one node's scripts, sourcing each other's functions) run on `cloud`, and
    the run-time command words that resolve to no function. Functions count only where a reachable line calls
    them; `poll_$GPUFLEET_CLOUD`-style words resolve with the cloud, a `"$SETTING"` word to the program the node's
    settings (bootstrap.env) name."""
    trees = [(script, syntax_tree(script)) for script in scripts]
    functions = {
        node["Name"]["Value"]: (script, node["Body"])
        for script, tree in trees for node in _nodes(tree) if node.get("Type") == "FuncDecl"
    }
    external: set[str] = set()
    unresolved: list[str] = []
    seen: set[str] = set()
    pending = [(script, tree) for script, tree in trees]
    while pending:
        script, root = pending.pop()
        for node in _walk(root, cloud):
            if node.get("Type") != "CallExpr" or not node.get("Args"):
                continue
            name, dynamic = _command_name(node["Args"], script)
            if dynamic is not None:
                name = dynamic.strip('"').replace("$GPUFLEET_CLOUD", cloud)
                if name.startswith("$") and name[1:] in (settings or {}):
                    name = (settings or {})[name[1:]]
                elif name not in functions:
                    unresolved.append(dynamic)
                    continue
            if name is None or name in BUILTINS:
                continue
            if name in functions:
                if name not in seen:
                    seen.add(name)
                    pending.append(functions[name])
            else:
                external.add(name)
    return external, unresolved
