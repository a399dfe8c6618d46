"""The power SDK's pinned wheels (lock `slurm.power_sdk`) as files for the tests, whatever releases PyPI has since.

The lock pins the releases this project's dev environment installed on the day `lock resolve` ran, and `make test`
installs the newest: once a pinned distribution has a newer release, the two differ. Where this environment runs the
pinned release, its installed files are packed again as a stand-in wheel (no download). Otherwise the pinned file
itself comes from the package index (pip download for the head image's CPython 3.10, the tags `lock resolve` reads
with), checked against the lock's sha256.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

from gpufleet.lock.power_sdk import HEAD_PLATFORMS, WheelPin


def runs_pinned(pin: WheelPin) -> bool:
    """Whether this environment has the pinned release of the distribution installed."""
    try:
        return importlib.metadata.version(pin.name) == pin.version
    except importlib.metadata.PackageNotFoundError:
        return False


def file_name(pin: WheelPin) -> str:
    return pin.url.rsplit("/", 1)[1]


def stand_in(pin: WheelPin, directory: Path) -> Path:
    """The installed distribution (at the pinned release) packed again as a wheel of the pinned file's name."""
    found = importlib.metadata.distribution(pin.name)
    assert found.version == pin.version, f"{pin.name}: the lock pins {pin.version}, installed is {found.version}"
    target = directory / file_name(pin)
    with zipfile.ZipFile(target, "w") as wheel:
        for file in found.files or []:
            path = Path(str(found.locate_file(file)))
            if "__pycache__" not in file.parts and not str(file).startswith("..") and path.is_file():
                wheel.write(path, str(file))
    return target


def fetched(pins: list[WheelPin], directory: Path) -> dict[str, Path]:
    """The pinned files themselves, by distribution name, each checked against its pinned sha256."""
    if not pins:
        return {}
    tags = [arg for platform in HEAD_PLATFORMS for arg in ("--platform", platform)]
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
         "--python-version", "3.10", "--implementation", "cp", "--abi", "cp310", "--abi", "abi3", "--abi", "none",
         *tags, "--dest", str(directory), *(f"{pin.name}=={pin.version}" for pin in pins)],
        capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"pip download of the pinned wheels failed:\n{done.stderr[-3000:]}"
    files = {}
    for pin in pins:
        path = directory / file_name(pin)
        assert path.is_file(), f"{pin.name} {pin.version}: pip chose another file than {file_name(pin)}"
        assert hashlib.sha256(path.read_bytes()).hexdigest() == pin.sha256, f"{file_name(pin)}: sha256 differs"
        files[pin.name] = path
    return files


def wheel_files(pins: list[WheelPin], directory: Path) -> dict[str, Path]:
    """Each pin as a wheel file: a stand-in where this environment runs the release, else the fetched file."""
    directory.mkdir(parents=True, exist_ok=True)
    files = fetched([pin for pin in pins if not runs_pinned(pin)], directory)
    return {pin.name: files[pin.name] if pin.name in files else stand_in(pin, directory) for pin in pins}


def wheel_metadata(path: Path) -> tuple[str | None, list[str]]:
    """A wheel's Requires-Python and Requires-Dist, from its METADATA."""
    with zipfile.ZipFile(path) as wheel:
        [name] = [n for n in wheel.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(wheel.read(name).decode())
    return metadata["Requires-Python"], metadata.get_all("Requires-Dist") or []
