"""The import graph of gpufleet/, components/ and policies/ has no cycle and no import from a lower layer into a
higher one; the layer order is ARCHITECTURE.md's "Layers" table, read here, so it is written once.

The graph is read with `ast`, not by importing: every `import` and `from ... import` statement counts, at module
level and inside functions alike (a function's import runs when it is called, and is a dependency all the same),
and so does `import_module("a.literal.name")`. Imports under `if TYPE_CHECKING:` do not count: they never run and
only name types for annotations. A module importing `a.b.c` depends on `a.b.c` only (not on the packages `a` and
`a.b` that Python initialises first), as import-linter's graph records it: a package's `__init__` is a module
like any other, whose own imports count where it is imported.

An import by a computed name is invisible to a static graph, so each one is declared below with the modules it
can reach; any other is a failure.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

import pytest
from conftest import REPO

from gpufleet.clouds.registry import CLOUDS

PACKAGES = ("gpufleet", "components", "policies")
# Imports by a computed name: the module that makes them -> what they can reach (each cloud's module by convention).
COMPUTED = {
    "gpufleet.clouds.lookup": [f"gpufleet.clouds.{cloud}.backend" for cloud in CLOUDS],
    "gpufleet.clouds.program": [f"gpufleet.clouds.{cloud}.program" for cloud in CLOUDS],
    "policies.registry": [f"policies.{cloud}" for cloud in CLOUDS],
    "gpufleet.preflight.runner": [f"gpufleet.preflight.{cloud}" for cloud in CLOUDS],
    "gpufleet.sources.sdk": [],  # a cloud SDK module (an optional extra), never a project module
    "components.clouds.slurm_power": [f"components.clouds.{cloud}.slurm_capacity" for cloud in CLOUDS],
}


def project_modules() -> dict[str, Path]:
    """Dotted name -> source file, for every module of the three packages (a package is its __init__.py)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(tree: ast.AST, type_only: bool = False) -> list[ast.AST]:
    """Every node of `tree` except what stands under `if TYPE_CHECKING:` (its `else:` branch runs, so it counts);
    with type_only, those too."""
    found: list[ast.AST] = []
    todo = [tree]
    while todo:
        node = todo.pop()
        found.append(node)
        if not type_only and isinstance(node, ast.If) and _type_checking_only(node):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return found


def imports_of(name: str, path: Path, modules: dict[str, Path], type_only: bool = False) -> tuple[set[str], list[str]]:
    """(the project modules `name` imports, the lines where it imports by a computed name)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    named: set[str] = set()
    computed: list[str] = []
    for node in _statements(ast.parse(path.read_text(encoding="utf-8"), str(path)), type_only):
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            # `from a.b import c` imports the module a.b.c where there is one, else the name c of a.b.
            named.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in (
            "import_module", "__import__"
        ):
            argument = node.args[0] if node.args else None
            if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                named.add(argument.value)
            else:
                computed.append(f"{path.relative_to(REPO)}:{node.lineno}")
    targets = set()
    for target in named:
        while target and target not in modules:  # `import a.b.c` of a name inside a module: the module
            target = target.rpartition(".")[0]
        if target and target != name:
            targets.add(target)
    return targets, computed


def import_graph(type_only: bool = False) -> tuple[dict[str, set[str]], dict[str, list[str]]]:
    """Module -> the modules it imports (with type_only, the imports under `if TYPE_CHECKING:` too)."""
    modules = project_modules()
    graph, computed = {}, {}
    for name, path in modules.items():
        graph[name], computed_here = imports_of(name, path, modules, type_only)
        if computed_here:
            computed[name] = computed_here
    for name, targets in COMPUTED.items():
        graph[name] |= set(targets)
    return graph, computed


def layer_table() -> list[tuple[str, list[str]]]:
    """ARCHITECTURE.md's Layers table, low to high: (layer name, module patterns)."""
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if re.match(r"^\| *\d+ *\|", line)]
    table = []
    for row in rows:
        cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
        table.append((f"{cells[0]} {cells[1]}", re.findall(r"`([^`]+)`", cells[2])))
    return table


def specificity(pattern: str) -> tuple[int, int]:
    """More literal characters is more specific; then fewer wildcards."""
    return len(pattern.replace("*", "")), -pattern.count("*")


def layers_of(modules: list[str]) -> tuple[dict[str, int], list[str]]:
    """Module -> index of its layer (its most specific pattern's), and the modules no pattern or two equally
    specific ones in different layers claim."""
    table = layer_table()
    layer, problems = {}, []
    for module in modules:
        matches = [(specificity(p), i) for i, (_, patterns) in enumerate(table) for p in patterns
                   if fnmatch.fnmatchcase(module, p)]
        if not matches:
            problems.append(f"{module}: in no layer")
            continue
        best = max(matches)[0]
        chosen = {i for s, i in matches if s == best}
        if len(chosen) > 1:
            problems.append(f"{module}: as specific in layers {sorted(chosen)}")
        layer[module] = min(chosen)
    return layer, problems


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:
        # Iterative: the graph is deep enough for Python's recursion limit to matter.
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def shortest_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One shortest cycle through the component's first member, as a path back to it (for the message)."""
    start, members = component[0], set(component)
    paths = {start: [start]}
    todo = [start]
    while todo:
        node = todo.pop(0)
        for target in sorted(graph[node] & members):
            if target == start:
                return [*paths[node], start]
            if target not in paths:
                paths[target] = [*paths[node], target]
                todo.append(target)
    return component


def test_every_module_has_one_layer() -> None:
    _, problems = layers_of(sorted(project_modules()))
    assert not problems, "\n".join(problems)


def test_no_import_by_a_computed_name_beyond_the_declared_ones() -> None:
    _, computed = import_graph()
    assert sorted(computed) == sorted(COMPUTED), computed


@pytest.mark.parametrize("type_only", [False, True], ids=["imports that run", "type-only imports too"])
def test_the_import_graph_has_no_cycle(type_only: bool) -> None:
    # Type-only imports never run, but a reader of the graph sees them: the layers hold for them too.
    graph, _ = import_graph(type_only)
    found = cycles(graph)
    shown = [f"{' -> '.join(shortest_cycle(graph, c))} ({len(c)} modules in the knot: {', '.join(c)})" for c in found]
    assert not found, "import cycles:\n" + "\n".join(shown)


def test_no_module_imports_from_a_higher_layer() -> None:
    graph, _ = import_graph()
    layer, _ = layers_of(sorted(graph))
    names = [name for name, _ in layer_table()]
    upward = [
        f"{module} ({names[layer[module]]}) -> {target} ({names[layer[target]]})"
        for module, targets in sorted(graph.items()) for target in sorted(targets)
        if module in layer and target in layer and layer[target] > layer[module]
    ]
    assert not upward, "imports into a higher layer:\n" + "\n".join(upward)


def test_the_checks_see_what_they_must() -> None:
    # The reader finds function-level and computed imports and skips TYPE_CHECKING ones; cycles are found.
    graph, _ = import_graph()
    assert "components.clouds.aws.cluster" in graph["gpufleet.clouds.aws.program"]  # inside a function
    assert "gpufleet.clouds.aws.backend" in graph["gpufleet.clouds.lookup"]  # by computed name, declared
    assert "gpufleet.lock" in graph["policies.lock"]  # import_module("gpufleet.lock")
    assert "gpufleet.resolve" not in graph["gpufleet.clouds.backend"]  # under TYPE_CHECKING only
    knot = {"a": {"b"}, "b": {"c", "a"}, "c": {"a"}, "d": {"a"}}
    assert cycles(knot) == [["a", "b", "c"]]
    assert shortest_cycle(knot, ["a", "b", "c"]) == ["a", "b", "a"]
