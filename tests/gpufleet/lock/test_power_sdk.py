"""The power program SDK wheels (lock `slurm.power_sdk.<cloud>`): each cloud's list is exactly the dependency closure
of what its capacity seam imports, for the head image's CPython 3.10 on x86_64 with glibc 2.35, or `images check`
refuses it naming the field and the reason.

The closure is proven offline from the Requires-Dist and Requires-Python each wheel's METADATA records (beside the
wheel in the lock), evaluated with packaging's PEP 508 markers under 3.10's environment. Not by an offline
`pip install --no-index --python-version 3.10`: pip evaluates markers against the Python running it (pypa/pip #11010),
so from this 3.11 environment it would accept a list without aiohttp's `python_version < "3.11"` async-timeout.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

import libyaml_files
import pytest
from conftest import REPO
from pinned_wheels import fetched, runs_pinned, wheel_metadata
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.lock import DEFAULT_LOCK_PATH, load_lock
from gpufleet.lock.needs import DownloadNeed, slurm_needs
from gpufleet.lock.power_sdk import SDK_ROOTS

PROFILE = "cuda12.8-r580"
CLOUDS = ("aws", "azure", "alicloud")


def _refusal(tmp_path: Path, change: Callable[[dict], None]) -> str:
    """`images check`'s words on the shipped lock with `change` made to its power_sdk, which it must refuse (exit 2)."""
    raw = libyaml_files.load(DEFAULT_LOCK_PATH.read_text())
    change(raw["profiles"][PROFILE]["slurm"]["power_sdk"])
    path = tmp_path / "lock.yaml"
    path.write_text(libyaml_files.dump(raw))
    done = CliRunner().invoke(app, ["images", "check", "--lock", str(path), "--profile", PROFILE])
    assert done.exit_code == 2, done.output
    return " ".join(done.output.split())


def _wheel(wheels: list[dict], name: str) -> dict:
    (found,) = [wheel for wheel in wheels if wheel["name"] == name]
    return found


def test_the_shipped_lock_pins_every_clouds_sdk_closure() -> None:
    pins = load_lock().profiles[PROFILE].slurm
    assert sorted(pins.power_sdk) == sorted(CLOUDS)
    names = {cloud: {wheel.name for wheel in pins.power_wheels(cloud)} for cloud in CLOUDS}
    assert set(SDK_ROOTS["azure"]) | {"cryptography", "cffi", "msal", "PyJWT"} <= names["azure"]
    # 3.10's own: aiohttp needs async-timeout below 3.11, which a resolver run from 3.11 leaves out.
    assert set(SDK_ROOTS["alicloud"]) | {"aiohttp", "async-timeout", "multidict", "yarl"} <= names["alicloud"]


def test_a_dependency_only_python_3_10_needs_is_not_left_out(tmp_path: Path) -> None:
    def drop(power_sdk: dict) -> None:
        power_sdk["alicloud"].remove(_wheel(power_sdk["alicloud"], "async-timeout"))
    output = _refusal(tmp_path, drop)
    assert "power_sdk.alicloud: not the closure of alibabacloud-credentials, alibabacloud-ess20220222, " \
           "alibabacloud-tea-openapi for the head image's Python 3.10: async-timeout is missing (aiohttp 3.14.5 " \
           "requires async-timeout<6.0,>=4.0; python_version < \"3.11\")" in output


def test_a_dependency_an_extra_asks_for_is_walked(tmp_path: Path) -> None:
    # msal requires PyJWT[crypto]; PyJWT's crypto extra requires cryptography (as do azure-identity and msal).
    def drop(power_sdk: dict) -> None:
        power_sdk["azure"].remove(_wheel(power_sdk["azure"], "cryptography"))
        for wheel in power_sdk["azure"]:
            wheel["requires_dist"] = [line for line in wheel.get("requires_dist", [])
                                      if not line.startswith("cryptography") or wheel["name"] == "PyJWT"]
    output = _refusal(tmp_path, drop)
    assert "cryptography is missing (PyJWT 2.15.1 requires cryptography>=3.4.0; extra == \"crypto\")" in output


def test_a_wheel_for_another_python_is_refused(tmp_path: Path) -> None:
    def other(power_sdk: dict) -> None:
        cffi = _wheel(power_sdk["azure"], "cffi")
        cffi["url"] = cffi["url"].replace("cp310-cp310", "cp311-cp311")
    output = _refusal(tmp_path, other)
    assert "cffi-2.1.1-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.whl is built for " \
           "cp311-cp311-manylinux2014_x86_64, cp311-cp311-manylinux_2_17_x86_64: the head image's CPython 3.10 on " \
           "x86_64 with glibc 2.35 cannot load it" in output


def test_a_wheel_for_a_newer_glibc_is_refused(tmp_path: Path) -> None:
    def newer(power_sdk: dict) -> None:
        cryptography = _wheel(power_sdk["azure"], "cryptography")
        cryptography["url"] = cryptography["url"].replace("manylinux_2_34", "manylinux_2_39")
    output = _refusal(tmp_path, newer)
    assert "cryptography-50.0.2-cp39-abi3-manylinux_2_39_x86_64.whl is built for" in output


def test_a_wheel_whose_python_excludes_3_10_is_refused(tmp_path: Path) -> None:
    def newer(power_sdk: dict) -> None:
        _wheel(power_sdk["azure"], "pycparser")["requires_python"] = ">=3.11"
    output = _refusal(tmp_path, newer)
    assert "requires_python: pycparser 3.11 needs Python >=3.11; the head image's is 3.10" in output


def test_a_version_a_dependant_excludes_and_a_wheel_nothing_needs_are_refused(tmp_path: Path) -> None:
    def wrong(power_sdk: dict) -> None:
        _wheel(power_sdk["aws"], "boto3")["requires_dist"] = ["botocore (<1.44.0,>=1.43.0)"]
    output = _refusal(tmp_path, wrong)
    assert "botocore 1.44.8 is outside botocore<1.44.0,>=1.43.0 (boto3 1.44.8)" in output
    # botocore still needs jmespath; only boto3 needed s3transfer.
    assert output.endswith("(boto3 1.44.8); s3transfer is pinned but nothing needs it")


def test_a_wheel_whose_file_is_another_release_is_refused(tmp_path: Path) -> None:
    def mislabel(power_sdk: dict) -> None:
        _wheel(power_sdk["aws"], "six")["version"] = "1.16.0"
    output = _refusal(tmp_path, mislabel)
    assert "url: six-1.17.0-py2.py3-none-any.whl is not six 1.16.0" in output


def _imported_distributions(cloud: str) -> set[str]:
    """The distributions (as their METADATA names them, lower case) whose modules components/clouds/<cloud>/
    slurm_capacity.py imports: each module's file, found by this environment's import system, looked up among the
    files of the distributions that install its top-level package (azure.* is a namespace several install)."""
    tree = ast.parse((REPO / f"components/clouds/{cloud}/slurm_capacity.py").read_text())
    modules = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    modules |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    owners = importlib.metadata.packages_distributions()
    found = set()
    for module in modules:
        top = module.split(".")[0]
        if top in sys.stdlib_module_names or top == "__future__":
            continue
        origin = Path(importlib.util.find_spec(module).origin).resolve()
        (owner,) = [name for name in set(owners[top])
                    if any(Path(str(importlib.metadata.distribution(name).locate_file(file))).resolve() == origin
                           for file in importlib.metadata.distribution(name).files or [])]
        found.add(importlib.metadata.distribution(owner).metadata["Name"].lower())
    return found


@pytest.mark.parametrize("cloud", CLOUDS)
def test_the_roots_are_what_the_capacity_seam_imports(cloud: str) -> None:
    assert _imported_distributions(cloud) == {name.lower() for name in SDK_ROOTS[cloud]}


def test_the_recorded_requirements_are_the_wheels_own(tmp_path: Path) -> None:
    # Each pinned wheel's METADATA says what the lock records: the installed distribution's where this environment runs
    # the pinned release (pip copied it from the wheel), else the pinned file's own, fetched and checked by its sha256
    # (tests/pinned_wheels.py). `lock resolve` reads every file's own (gpufleet/sources/downloads.py).
    profile = load_lock().profiles[PROFILE]
    pins = list({(w.name, w.version): w for cloud in CLOUDS for w in profile.slurm.power_wheels(cloud)}.values())
    files = fetched([pin for pin in pins if not runs_pinned(pin)], tmp_path)
    for pin in pins:
        if pin.name in files:
            recorded = wheel_metadata(files[pin.name])
        else:
            found = importlib.metadata.distribution(pin.name)
            recorded = (found.metadata["Requires-Python"], found.metadata.get_all("Requires-Dist") or [])
        assert recorded == (pin.requires_python, pin.requires_dist), pin.name


def test_lock_resolve_reads_each_wheel_against_its_recorded_requirements() -> None:
    profile = load_lock().profiles[PROFILE]
    needs = {need.url: need for need in slurm_needs(profile, ("azure",)) if isinstance(need, DownloadNeed)}
    wheels = profile.slurm.power_wheels("azure")
    assert wheels and all(needs[wheel.url].wheel_requires == (wheel.requires_python, tuple(wheel.requires_dist))
                          for wheel in wheels)
    assert not any("/boto3-" in url for url in needs)  # an Azure bake reads no AWS-only wheel
