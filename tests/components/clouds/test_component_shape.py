"""Component constructors read as a list of steps: each cloud's cluster runs the same named `create_*` steps, no
function under components/ runs past 60 lines, and every component registers its outputs last."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import REPO

COMPONENTS = REPO / "components"
CLOUDS = ("aws", "azure", "alicloud")
# The steps every cloud's cluster takes, in this order; a cloud adds its own (logs, budget, gate...) between them.
SHARED_STEPS = ("create_network", "create_key", "create_identity", "create_alarm_target", "create_groups")
MAX_FUNCTION_LINES = 60


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _component_inits(tree: ast.Module) -> list[tuple[str, ast.FunctionDef]]:
    """(class name, __init__) of every pulumi.ComponentResource subclass in the module."""
    found = []
    for node in tree.body:
        bases = [ast.unparse(base) for base in node.bases] if isinstance(node, ast.ClassDef) else []
        if any(base.endswith("ComponentResource") for base in bases):
            found += [(node.name, item) for item in node.body
                      if isinstance(item, ast.FunctionDef) and item.name == "__init__"]
    return found


def _called(function: ast.FunctionDef) -> list[str]:
    """Names of the plain functions `function` calls, in source order."""
    calls = [node for node in ast.walk(function) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)]
    return [call.func.id for call in sorted(calls, key=lambda call: (call.lineno, call.col_offset))]


@pytest.mark.parametrize("cloud", CLOUDS)
def test_each_cluster_constructor_is_the_shared_steps_in_order(cloud: str) -> None:
    tree = _tree(COMPONENTS / "clouds" / cloud / "cluster.py")
    defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert set(SHARED_STEPS) <= defined
    ((_, init),) = _component_inits(tree)
    steps = [name for name in _called(init) if name.startswith("create_")]
    assert [name for name in steps if name in SHARED_STEPS] == list(SHARED_STEPS)
    assert set(steps) <= defined, "every step is a function of the module"


def test_no_function_under_components_runs_past_60_lines() -> None:
    long = {
        f"{path.relative_to(REPO)}:{node.name}": node.end_lineno - node.lineno + 1
        for path in sorted(COMPONENTS.rglob("*.py"))
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    }
    assert long == {}


def test_every_component_registers_its_outputs_last() -> None:
    inits = [(path, name, init) for path in sorted(COMPONENTS.rglob("*.py"))
             for name, init in _component_inits(_tree(path))]
    assert len(inits) >= 15
    for path, name, init in inits:
        last = init.body[-1]
        assert isinstance(last, ast.Expr) and ast.unparse(last).startswith("self.register_outputs("), (
            f"{path.relative_to(REPO)}: {name}.__init__ ends with `{ast.unparse(last)}`")
