"""The Pulumi project a command works on, found as the Pulumi CLI finds it: the nearest `Pulumi.yaml` (or
`Pulumi.yml`) from the working directory upward; its stack files sit in its `stackConfigDir` (relative to the
project file), else beside it. `--stacks-dir` names the stack folder outright."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .stackfile.errors import SpecError, SpecInvalid
from .yaml_model import read_yaml

PROJECT_FILES = ("Pulumi.yaml", "Pulumi.yml")


@dataclass(frozen=True)
class Project:
    root: Path
    """The folder holding the project file."""
    stacks_dir: Path
    """Where its Pulumi.<stack>.yaml files are."""


def find_project(start: Path) -> Project | None:
    """The project holding `start` (a folder), or None when no folder from it upward has a project file."""
    for folder in (start.resolve(), *start.resolve().parents):
        for name in PROJECT_FILES:
            if (folder / name).is_file():
                return Project(folder, folder / _stack_config_dir(folder / name))
    return None


def _stack_config_dir(project_file: Path) -> str:
    settings = read_yaml(project_file)
    configured = settings.get("stackConfigDir") if isinstance(settings, dict) else None
    if configured is not None and (not isinstance(configured, str) or not configured.strip()):
        raise SpecInvalid([SpecError("stackConfigDir", f"{project_file}: must be a folder name, got {configured!r}")])
    return configured or "."


def stacks_dir(given: Path | None, start: Path | None = None) -> Path:
    """`--stacks-dir` when given, else the stack folder of the project holding `start` (the working directory);
    SpecInvalid (exit 2) naming both ways when there is neither."""
    if given is not None:
        return given
    project = find_project(start or Path.cwd())
    if project is None:
        raise SpecInvalid([SpecError("--stacks-dir", f"no Pulumi.yaml in {start or Path.cwd()} or any folder above: "
                                     "run gpufleet in your Pulumi project, or pass --stacks-dir FOLDER")])
    return project.stacks_dir


def project_root(stacks: Path) -> Path:
    """The project a stack folder belongs to (the nearest project file from it upward), else the folder itself."""
    project = find_project(stacks)
    return project.root if project is not None else stacks
