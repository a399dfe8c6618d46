"""policies/requirements.txt installs what the pack imports, ranged as pyproject.toml ranges it, and nothing else.

`pulumi up --policy-pack policies` builds the pack's virtualenv from that file alone (tests/pack_venv.py), so a
third-party module that the pack's code reaches but the file leaves out stops the pack at load.
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import subprocess
import sys
from pathlib import Path

import tomllib
from pack_venv import REPO, pack_requirements
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

OWN = ("gpufleet", "components", "images", "policies")
ENTRY = "policies.__main__"


def module_file(module: str) -> Path | None:
    """The source file of one of the project's modules, or None when it names no module (an attribute)."""
    base = REPO.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def imported_names(module: str) -> list[str]:
    """Every module one module may import, wherever the statement stands (functions too: lazy imports run when a
    rule does), and `import_module("literal")`. Relative imports resolved; `from X import name` gives X and,
    where it is a module, X.name."""
    path = module_file(module)
    assert path is not None, module
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            found.append(base)
            found += [f"{base}.{alias.name}" for alias in node.names if module_file(f"{base}.{alias.name}")]
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
        ):
            found.append(node.args[0].value)
    return found


def loaded_at_import() -> list[str]:
    """The project's modules that importing the pack's registry loads, in a fresh interpreter: this resolves the
    imports a static read cannot (policies/registry.py imports each cloud's package by a computed name)."""
    # The pack prepares the stack it checks (policies/stack_settings.py), which runs every cloud's spec checks
    # (gpufleet/clouds/<cloud>/checks.py, reached through the backend, which is loaded by name).
    script = (
        "import sys, importlib, policies.registry, policies.stack_settings; "
        "from gpufleet.clouds.registry import CLOUDS; "
        "[importlib.import_module(f'gpufleet.clouds.{cloud}.checks') for cloud in CLOUDS]; "
        f"print(*sorted(m for m in sys.modules if m.split('.')[0] in {OWN!r}))"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, check=True, capture_output=True, text=True)
    return out.stdout.split()


def third_party_closure() -> dict[str, set[str]]:
    """Third-party module -> the project modules that import it, over everything the entry point reaches."""
    seen: set[str] = set()
    todo = [ENTRY, *loaded_at_import()]
    third: dict[str, set[str]] = {}
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        for name in imported_names(module):
            top = name.split(".")[0]
            if top in OWN:
                parts = name.split(".")
                # Importing a.b.c runs a/__init__.py and a/b/__init__.py first.
                todo += [".".join(parts[:i]) for i in range(1, len(parts) + 1) if module_file(".".join(parts[:i]))]
            elif top != "__future__" and top not in sys.stdlib_module_names:
                third.setdefault(name, set()).add(module)
    return third


def distribution_of(module: str) -> str:
    """The distribution providing a module: packages_distributions() by top-level name, narrowed by the module's
    own path where a namespace package (ruamel) is shared by several distributions."""
    top = module.split(".")[0]
    candidates = metadata.packages_distributions().get(top, [])
    assert candidates, f"no installed distribution provides {module}"
    if len(set(candidates)) > 1:
        prefix = "/".join(module.split("."))
        candidates = [
            name for name in candidates
            if any(str(file).startswith(prefix) for file in metadata.distribution(name).files or [])
        ]
    (name,) = set(candidates)
    return str(canonicalize_name(name))


def needed_distributions() -> dict[str, list[str]]:
    """Canonical distribution name -> the project modules that need it."""
    needed: dict[str, set[str]] = {}
    for module, importers in third_party_closure().items():
        needed.setdefault(distribution_of(module), set()).update(importers)
    return {name: sorted(importers) for name, importers in needed.items()}


def project_ranges() -> dict[str, Requirement]:
    with (REPO / "pyproject.toml").open("rb") as handle:
        dependencies = tomllib.load(handle)["project"]["dependencies"]
    return {str(canonicalize_name(r.name)): r for r in map(Requirement, dependencies)}


def test_closure_follows_lazy_and_computed_imports_into_the_application() -> None:
    closure = third_party_closure()
    # gpufleet.lock is imported by name inside a function (policies/lock.py); its models need pydantic and
    # gpufleet.yaml_model needs ruamel.yaml: both only reachable through the project's own modules.
    assert "gpufleet.yaml_model" in closure["ruamel.yaml"]
    assert "policies.__main__" in closure["pulumi_policy"]
    assert {"policies.aws", "policies.azure", "policies.alicloud"} <= set(loaded_at_import())
    assert "pulumi_aws" not in {name.split(".")[0] for name in closure}  # the pack needs no provider SDK


def test_requirements_list_exactly_the_imported_distributions_at_the_project_ranges() -> None:
    needed = needed_distributions()
    listed = {str(canonicalize_name(r.name)): r for r in pack_requirements()}
    ranges = project_ranges()
    missing = {name: importers for name, importers in needed.items() if name not in listed}
    assert not missing, f"policies/requirements.txt lacks distributions the pack imports: {missing}"
    unneeded = sorted(set(listed) - set(needed))
    assert not unneeded, f"policies/requirements.txt lists distributions the pack never imports: {unneeded}"
    for name, requirement in listed.items():
        assert name in ranges, f"{requirement} is not a dependency in pyproject.toml"
        assert requirement.specifier == ranges[name].specifier, (
            f"policies/requirements.txt has {requirement}, pyproject.toml {ranges[name]}"
        )
