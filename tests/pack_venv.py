"""The policy pack's own virtualenv, as the Pulumi CLI builds it, made offline from this interpreter's packages.

For `--policy-pack policies` the CLI's Python toolchain creates `policies/.venv` (PulumiPolicy.yaml's
`virtualenv`) and runs `python -m pip install -r requirements.txt` in policies/ (pulumi/pulumi
sdk/python/toolchain/pip.go, InstallDependencies). Here the same distributions, at the versions this
interpreter has, are linked into a fresh `venv --without-pip`: exactly what requirements.txt names and
what those need (their Requires-Dist, markers evaluated), and nothing else, in particular not the
editable install of gpufleet that the development virtualenv carries.
"""

from __future__ import annotations

import importlib.metadata as metadata
import subprocess
import sys
import sysconfig
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parent.parent
POLICIES = REPO / "policies"
REQUIREMENTS = POLICIES / "requirements.txt"


def pack_requirements(path: Path = REQUIREMENTS) -> list[Requirement]:
    """requirements.txt's requirements (comments and blank lines skipped; pip options are not used here)."""
    found = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        assert not line.startswith("-"), f"{path.name}:{number}: pip option {line!r} is not expected here"
        found.append(Requirement(line))
    return found


def _wanted(requirement: Requirement, extras: set[str]) -> bool:
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({"extra": extra}) for extra in extras or {""})


def distribution_closure(requirements: list[Requirement]) -> dict[str, metadata.Distribution]:
    """The installed distributions pip would install for `requirements` (top-level ones must satisfy their
    specifier here, or the venv would not be the one pip builds), keyed by canonical name."""
    found: dict[str, metadata.Distribution] = {}
    todo = [(requirement, True) for requirement in requirements]
    while todo:
        requirement, top = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in found:
            continue
        dist = metadata.distribution(requirement.name)
        if top:
            assert requirement.specifier.contains(dist.version, prereleases=True), (
                f"installed {requirement.name} {dist.version} does not satisfy requirements.txt's {requirement}"
            )
        found[name] = dist
        for line in dist.requires or []:
            needed = Requirement(line)
            if _wanted(needed, set(requirement.extras)):
                todo.append((needed, False))
    return found


def build_pack_venv(target: Path) -> Path:
    """A virtualenv at `target` holding the requirements' distributions; returns its interpreter."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], check=True)
    python = target / "bin" / "python"
    site = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip())
    here = Path(sysconfig.get_paths()["purelib"]).resolve()
    for dist in distribution_closure(pack_requirements()).values():
        root = Path(str(dist.locate_file(""))).resolve()
        assert root == here, f"{dist.metadata['Name']} is installed outside site-packages ({root})"
        tops = {Path(str(file)).parts[0] for file in dist.files or []}
        assert tops, f"{dist.metadata['Name']} lists no files (no RECORD)"
        for top in tops - {".."}:  # ".." entries are console scripts under bin/, not importable
            link = site / top
            if not link.exists():
                link.symlink_to(root / top)
    return python
