"""The wheels of the head node's power program SDK (lock `slurm.power_sdk.<cloud>`), and the proof that each cloud's
list is the whole dependency closure of what its capacity seam imports, for the head image's Python.

The head node boots the cluster's Ubuntu 22.04 image, whose python3 is CPython 3.10 on x86_64 with glibc 2.35; it has
no pip, so the bake unpacks each pinned wheel as `pip install --target` would (images/install/slurm-power.sh). A wheel
is therefore checked here as pip on that machine would judge it: its file name's tags against that interpreter's
(packaging.tags, PEP 425; manylinux_2_x runs on glibc x.y or newer, PEP 600, with the older aliases of PEPs 513, 571
and 599), its Requires-Python, and every Requires-Dist it records evaluated under that interpreter's PEP 508 markers.
The markers are evaluated here rather than by `pip --python-version 3.10`: pip evaluates them against the
interpreter running it (pypa/pip #11010, #10050), so from a newer Python it leaves out 3.10's own dependencies
(aiohttp's async-timeout, `python_version < "3.11"`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING

from pydantic import Field, model_validator

from ..yaml_model import StrictModel

# packaging is imported where a wheel is checked, not with the lock's model: a lock read back validated
# (gpufleet/derived_cache.py) needs none of it, and every command reads the lock (~14 ms of its start).
if TYPE_CHECKING:
    from packaging.requirements import Requirement

HEAD_PYTHON = (3, 10)
# glibc 2.35 runs manylinux_2_35 down to manylinux_2_5 wheels (PEP 600); the legacy names are aliases of 2_17, 2_12
# and 2_5. Ranked as pip ranks them, newest glibc first.
_GLIBC_MINORS = range(35, 4, -1)
_LEGACY = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
HEAD_PLATFORMS = tuple(name for minor in _GLIBC_MINORS
                       for name in (f"manylinux_2_{minor}_x86_64",
                                    *((f"{_LEGACY[minor]}_x86_64",) if minor in _LEGACY else ())))


@cache
def head_tags() -> frozenset[object]:
    """Every wheel tag the head image's interpreter loads (packaging.tags.Tag)."""
    from packaging.tags import compatible_tags, cpython_tags

    return frozenset((*cpython_tags(HEAD_PYTHON, abis=["cp310"], platforms=HEAD_PLATFORMS),
                      *compatible_tags(HEAD_PYTHON, interpreter="cp310", platforms=HEAD_PLATFORMS)))


# PEP 508's environment of the head image's python3 (no patch level is pinned: 3.10's first release stands for it).
HEAD_MARKERS = {"python_version": "3.10", "python_full_version": "3.10.0", "implementation_name": "cpython",
                "implementation_version": "3.10.0", "platform_python_implementation": "CPython", "os_name": "posix",
                "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64"}
# What each cloud's capacity seam (components/clouds/<cloud>/slurm_capacity.py) imports, as PyPI names the
# distributions: the roots of its closure.
SDK_ROOTS = {
    "aws": ("boto3",),
    "azure": ("azure-identity", "azure-mgmt-compute"),
    "alicloud": ("alibabacloud-credentials", "alibabacloud-ess20220222", "alibabacloud-tea-openapi"),
}


class WheelPin(StrictModel):
    """A wheel from PyPI for the head image's Python: its URL and sha256 as PyPI's simple index lists them (`lock
    resolve` reads the bytes against it) and the Requires-Python and Requires-Dist of its METADATA."""

    name: str = Field(..., pattern=r"^[A-Za-z0-9._-]+$", description="the distribution, as PyPI names it")
    version: str = Field(..., min_length=1)
    url: str = Field(..., pattern=r"^https://\S+\.whl$", description="the wheel on PyPI's file host")
    sha256: str = Field(..., pattern=r"^[0-9a-f]{64}$")
    requires_python: str | None = Field(None, description="the METADATA's Requires-Python (none: any)")
    requires_dist: list[str] = Field(default_factory=list, description="the METADATA's Requires-Dist lines")

    @model_validator(mode="after")
    def _for_the_head_python(self) -> WheelPin:
        from packaging.requirements import InvalidRequirement
        from packaging.specifiers import InvalidSpecifier, SpecifierSet
        from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
        from packaging.version import Version

        file = self.url.rsplit("/", 1)[1]
        try:
            name, version, _, tags = parse_wheel_filename(file)
        except InvalidWheelFilename as error:
            raise ValueError(f"url: {error}") from None
        if name != canonicalize_name(self.name) or version != Version(self.version):
            raise ValueError(f"url: {file} is not {self.name} {self.version}")
        if not tags & head_tags():
            raise ValueError(f"url: {file} is built for {', '.join(sorted(map(str, tags)))}: the head image's "
                             "CPython 3.10 on x86_64 with glibc 2.35 cannot load it")
        try:
            if self.requires_python and not SpecifierSet(self.requires_python).contains("3.10", prereleases=True):
                raise ValueError(f"requires_python: {self.name} {self.version} needs Python {self.requires_python}; "
                                 "the head image's is 3.10")
            for line in self.requires_dist:
                _requirement(line)
        except (InvalidSpecifier, InvalidRequirement) as error:
            raise ValueError(f"{self.name}: {error}") from None
        return self


@cache
def _requirement(line: str) -> Requirement:
    """A Requires-Dist line parsed once per process: the six closures of a lock share most of their ~300 lines,
    each read by the wheel's check and again by its closure walk. Raises InvalidRequirement."""
    from packaging.requirements import Requirement

    return Requirement(line)


def _applies(requirement: Requirement, extra: str) -> bool:
    from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName

    if requirement.marker is None:
        return True
    try:
        return requirement.marker.evaluate({**HEAD_MARKERS, "extra": extra})
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName) as error:
        raise ValueError(f"marker {requirement.marker}: {error}") from None


def closure_problems(cloud: str, wheels: Sequence[WheelPin]) -> list[str]:
    """Why `wheels` is not exactly the closure of the cloud's SDK_ROOTS under the head image's Python (empty: it
    is): a dependency missing or at a version its dependant excludes, a wheel twice, or a wheel nothing needs."""
    from packaging.utils import canonicalize_name

    pinned = {canonicalize_name(wheel.name): wheel for wheel in wheels}
    problems = [f"{name} is pinned twice" for name in sorted(pinned)
                if sum(canonicalize_name(wheel.name) == name for wheel in wheels) > 1]
    # (requirement, who asked for it); each distribution is walked once per extra it is asked with.
    todo = [(_requirement(root), "the capacity seam") for root in SDK_ROOTS.get(cloud, ())]
    walked: set[tuple[str, str]] = set()
    while todo:
        requirement, by = todo.pop()
        name = canonicalize_name(requirement.name)
        wheel = pinned.get(name)
        if wheel is None:
            problems.append(f"{requirement.name} is missing ({by} requires {requirement})")
            continue
        if not requirement.specifier.contains(wheel.version, prereleases=True):
            problems.append(f"{wheel.name} {wheel.version} is outside {requirement} ({by})")
        for extra in ("", *sorted(requirement.extras)):
            if (name, extra) in walked:
                continue
            walked.add((name, extra))
            todo += [(needed, f"{wheel.name} {wheel.version}") for needed in map(_requirement, wheel.requires_dist)
                     if _applies(needed, extra)]
    needed = {name for name, _ in walked}
    problems += [f"{pinned[name].name} is pinned but nothing needs it" for name in sorted(set(pinned) - needed)]
    return problems
