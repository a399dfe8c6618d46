"""images/nodecheck-image/Containerfile builds what the AKS and ACK node-check DaemonSet runs, read without docker.

The image's working directory is rebuilt in a temporary directory by applying the Containerfile's COPY lines to
the checkout; modulefinder then resolves `python3 -m images.nodecheck` there against the standard library only, so
every module it cannot find must come from requirements.txt. The commands come from node_check_objects itself.
"""

from __future__ import annotations

import importlib.metadata as metadata
import modulefinder
import re
import shlex
import shutil
import sysconfig
from pathlib import Path

import pytest
import tomllib
from kubernetes_objects import ACK_EXPECTATIONS, ERDMA, EXPECTATIONS, IB
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from shell_commands import commands

from components.kubernetes.node_check import SCRIPT, node_check_objects
from components.kubernetes.spot_drain import SCRIPT as DRAIN_SCRIPT
from gpufleet.lock import load_lock

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "images" / "nodecheck-image"
# What the image runs commands with: the base image's python3; dash (sh) and coreutils (sleep) are Essential in every
# Debian image, python:3.11-slim-bookworm included.
PROVIDED = {"python3", "sh", "sleep"}


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per logical line: backslash continuations joined, comments dropped."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    logical = re.sub(r"\\\n", " ", "\n".join(lines))
    return [(word.upper(), rest.strip()) for word, _, rest in (line.strip().partition(" ") for line in
                                                                logical.splitlines() if line.strip())]


CONTAINERFILE = instructions((RECIPE / "Containerfile").read_text())


def args_of(name: str) -> list[str]:
    return [rest for word, rest in CONTAINERFILE if word == name]


def env() -> dict[str, str]:
    return dict(pair.split("=", 1) for rest in args_of("ENV") for pair in shlex.split(rest))


def copies() -> list[tuple[list[str], str]]:
    """(sources, destination) of each COPY, flags left out."""
    found = []
    for rest in args_of("COPY"):
        words = [w for w in shlex.split(rest) if not w.startswith("--")]
        found.append((words[:-1], words[-1]))
    return found


def requirements() -> list[str]:
    """requirements.txt's logical lines, comments and continuations resolved."""
    text = re.sub(r"\\\n", " ", (RECIPE / "requirements.txt").read_text())
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def pinned() -> dict[str, tuple[str, list[str]]]:
    """Canonical name -> (version, sha256 hashes) of each requirement line."""
    found = {}
    for line in requirements():
        spec, *options = line.split()
        requirement = Requirement(spec)
        (specifier,) = requirement.specifier
        assert specifier.operator == "==", line
        hashes = [o.removeprefix("--hash=sha256:") for o in options if o.startswith("--hash=sha256:")]
        found[str(canonicalize_name(requirement.name))] = (specifier.version, hashes)
    return found


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The image's working directory: the COPY lines whose destination is relative, applied to the checkout."""
    root = tmp_path_factory.mktemp("image") / "workdir"
    for sources, dest in copies():
        if dest.startswith("/"):
            continue
        for source in sources:
            target = root / dest
            if (REPO / source).is_dir():
                shutil.copytree(REPO / source, target, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(REPO / source, target)
    return root


def stdlib_finder(*extra: Path) -> modulefinder.ModuleFinder:
    stdlib = sysconfig.get_paths()["stdlib"]
    return modulefinder.ModuleFinder(path=[*map(str, extra), stdlib, str(Path(stdlib) / "lib-dynload")])


def missing_from(finder: modulefinder.ModuleFinder, importer: str) -> dict[str, set[str]]:
    """Modules the finder could not resolve -> the importers matching `importer` (the stdlib's own optional
    imports, e.g. Windows modules, are not the check's)."""
    found = {name: {i for i in importers if i.split(".")[0] == importer} for name, importers
             in finder.badmodules.items()}
    return {name: importers for name, importers in found.items() if importers}


def provided_modules() -> set[str]:
    """Top-level modules the pinned distributions install (their RECORD in the development environment)."""
    found = set()
    for name in pinned():
        for file in metadata.distribution(name).files or []:
            top = file.parts[0]
            if top.endswith(".py"):
                found.add(top.removesuffix(".py"))
            elif not top.endswith((".dist-info", "__pycache__")) and len(file.parts) > 1:
                found.add(top)
    return found


def test_the_image_holds_the_package_and_the_check_only() -> None:
    sources = [source.rstrip("/") for found, _ in copies() for source in found]
    assert "images/__init__.py" in sources and "images/nodecheck" in sources
    assert all((REPO / source).exists() for source in sources), sources
    assert not [s for s in sources if s in ("images", ".") or s.startswith(("images/install", "gpufleet"))]
    # The build context is cut to what the image copies (BuildKit reads <Containerfile>.dockerignore beside -f).
    ignore = [line for line in (RECIPE / "Containerfile.dockerignore").read_text().splitlines()
              if line and not line.startswith("#")]
    assert ignore[0] == "*" and all(f"!{s}" in ignore for s in sources), (ignore, sources)


def test_python_m_images_nodecheck_resolves_in_the_image_with_the_stdlib_and_the_requirements(workdir: Path) -> None:
    assert env()["PYTHONPATH"] == args_of("WORKDIR")[-1]  # importable whatever directory a pod starts in
    finder = stdlib_finder(workdir)
    finder.import_hook("images.nodecheck.__main__")
    ours = {name for name in finder.modules if name.split(".")[0] == "images"}
    assert {"images", "images.nodecheck", "images.nodecheck.__main__", "images.nodecheck.gpus"} <= ours
    missing = missing_from(finder, "images")
    # The lazy `import pynvml` (images/nodecheck/gpus.py) is the one module neither the stdlib nor the copy has.
    assert "pynvml" in missing and set(missing) <= provided_modules(), missing


@pytest.mark.parametrize("script", [SCRIPT, DRAIN_SCRIPT], ids=lambda p: p.name)
def test_the_pod_scripts_need_the_standard_library_and_their_api_helper_only(script: Path) -> None:
    finder = stdlib_finder(script.parent)  # the ConfigMap ships kube_api.py beside the script
    finder.run_script(str(script))
    assert missing_from(finder, "__main__") == {}
    assert "kube_api" in finder.modules


def daemonset_containers() -> list[dict]:
    """Every container of the AKS (operator driver) and ACK (host driver) node-check DaemonSets."""
    pins = load_lock().kubernetes_components
    objects = [*node_check_objects((IB,), pins, EXPECTATIONS),
               *node_check_objects((ERDMA,), pins, ACK_EXPECTATIONS, host_driver=True)]
    specs = [o["spec"]["template"]["spec"] for o in objects if o["kind"] == "DaemonSet"]
    return [c for spec in specs for c in (*spec["initContainers"], *spec["containers"])]


def test_the_daemonset_runs_only_what_the_image_provides(workdir: Path) -> None:
    containers = daemonset_containers()
    assert {c["name"] for c in containers} == {"wait-for-driver", "node-check", "passed"}
    for container in containers:
        argv = container["command"]
        script = argv[2] if argv[:2] == ["sh", "-c"] else shlex.join(argv)
        assert {argv[0], *commands(script).external} <= PROVIDED, (container["name"], script)
        words = shlex.split(script)
        for index in (i for i, word in enumerate(words) if word == "python3"):
            flag, *target = words[index + 1 : index + 3]
            if flag == "-m":  # a module of the image
                assert (workdir.joinpath(*target[0].split(".")) / "__main__.py").is_file(), target
            elif flag != "-c":  # a script the pod mounts
                mounts = [m["mountPath"] for m in container.get("volumeMounts", [])]
                assert any(flag.startswith(f"{m}/") for m in mounts), (flag, mounts)


def test_the_image_runs_unprivileged_on_a_read_only_root_filesystem() -> None:
    assert env()["PYTHONDONTWRITEBYTECODE"] == "1"
    (user,) = args_of("USER")
    assert user.split(":")[0] not in ("", "0", "root"), user
    (base,) = args_of("FROM")
    assert re.fullmatch(r"\S+@sha256:[0-9a-f]{64}", base), base


def test_requirements_are_hash_pinned_within_the_node_extra_and_match_the_lock() -> None:
    (install,) = [rest for rest in args_of("RUN") if "pip install" in rest]
    # the requirements path is inside the image build, not on this machine
    assert "--require-hashes" in install.split() and "-r /tmp/requirements.txt" in install  # machine-path-ok
    assert (["images/nodecheck-image/requirements.txt"], "/tmp/requirements.txt") in copies()  # machine-path-ok
    assert all("==" in line and "--hash=sha256:" in line for line in requirements())
    with (REPO / "pyproject.toml").open("rb") as handle:
        node = [Requirement(r) for r in tomllib.load(handle)["project"]["optional-dependencies"]["node"]]
    found = pinned()
    assert set(found) == {str(canonicalize_name(r.name)) for r in node}
    for requirement in node:
        version, hashes = found[str(canonicalize_name(requirement.name))]
        assert requirement.specifier.contains(version), (requirement, version)
        assert hashes and all(re.fullmatch(r"[0-9a-f]{64}", h) for h in hashes)
    # Pods and baked nodes run the same binding: the lock's wheel for every baked profile (an ACK-installed one has no
    # baked node: its nodes run the node check in this image only).
    version, hashes = found["nvidia-ml-py"]
    baked = {name: profile for name, profile in load_lock().profiles.items() if profile.baked}
    assert baked
    for name, profile in baked.items():
        assert (profile.nodecheck.nvidia_ml_py, profile.nodecheck.nvidia_ml_py_sha256) == (version, hashes[0]), name
