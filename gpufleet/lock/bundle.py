"""The installer as self-contained shell commands: the install scripts, the node check and the profile's pins
packed into a reproducible tar.gz, inlined as base64 so an image build needs no bucket.

The bundle outgrew one image component (EC2 Image Builder takes 16,000 characters of inline data, CreateComponent
`data`; Alibaba 16 KB per component and per command, CreateImageComponent), so it travels in parts: each part
writes one slice of the base64 text, and the last checks the reassembled archive against the sha256 it carries
before it unpacks and runs it. A pipeline runs the parts in order, one component each (a recipe takes several
components; Alibaba's template several `COMPONENT` lines). Each part is one POSIX sh line (Alibaba's
Dockerfile-style RUN, Azure's /bin/sh customizer, Image Builder's ExecuteBash all run it).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import tarfile
from pathlib import Path

from .install_env import render_install_env
from .model import Profile

PROJECT_DIR = Path(__file__).resolve().parent.parent.parent
IMAGES_DIR = PROJECT_DIR / "images"
BUNDLE_DIR = "/opt/gpufleet/src"
PARTS_DIR = "/opt/gpufleet/bundle"
# Base64 characters per part: a part's component (Image Builder document, or Alibaba RUN line) stays well under
# 16,000 characters with its wrapper; tests check each cloud's component against its own limit.
PART_CHARS = 12_000
PACKED = ("__init__.py", "install", "nodecheck")
# The head node's power program (gpufleet-slurm-power: components/clouds/slurm_power.py), packed for a Slurm
# profile's image and installed by images/install/slurm-power.sh: the modules it imports and nothing else (no
# Pulumi, no pydantic; tests/images/test_slurm_power_install.py runs it isolated from everything but these), plus
# the one cloud's capacity seam.
POWER_PROGRAM = ("components/__init__.py", "components/clouds/__init__.py", "components/clouds/slurm_power.py",
                 *(f"components/slurm/{name}.py"
                   for name in ("__init__", "controller", "power", "power_program", "queue_watch", "spot_leave")))


def power_program_files(cloud: str) -> tuple[str, ...]:
    """The project files of `cloud`'s power program, relative to the project."""
    return (*POWER_PROGRAM, f"components/clouds/{cloud}/__init__.py", f"components/clouds/{cloud}/slurm_capacity.py")


def image_check(booted: bool) -> str:
    """The image check (images/install/image-check.sh in the unpacked bundle) as one command, whose exit status is the
    step's: `booted` where the VM booted the image (it must run the image's kernel)."""
    return f"bash {BUNDLE_DIR}/images/install/image-check.sh" + (" --booted" if booted else "")


def _add(archive: tarfile.TarFile, name: str, data: bytes, mode: int) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime, info.uid, info.gid = len(data), mode, 0, 0, 0
    archive.addfile(info, io.BytesIO(data))


def _without_comment_lines(script: bytes) -> bytes:
    """A shell script less its whole-line comments (shebangs kept): the bundle rides inline in an image component
    that takes 16 KB (Alibaba) or 16,000 characters (AWS), and the comments are for readers of the checkout."""
    lines = script.decode().splitlines(keepends=True)
    return "".join(line for line in lines if not line.lstrip().startswith("#") or line.startswith("#!")).encode()


def pack(profile: Profile, cloud: str) -> bytes:
    """tar.gz of images/{__init__.py,install,nodecheck}, the power program of a profile that pins its SDK for `cloud`
    and pins.env; identical bytes for identical input."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as archive:
        files = sorted(
            p for entry in PACKED for p in ([IMAGES_DIR / entry] if (IMAGES_DIR / entry).is_file()
                                           else (IMAGES_DIR / entry).rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts
        )
        for path in files:
            shell = path.suffix == ".sh"
            data = _without_comment_lines(path.read_bytes()) if shell else path.read_bytes()
            _add(archive, f"images/{path.relative_to(IMAGES_DIR).as_posix()}", data, 0o755 if shell else 0o644)
        if profile.slurm is not None and profile.slurm.power_wheels(cloud):
            for name in power_program_files(cloud):
                _add(archive, name, (PROJECT_DIR / name).read_bytes(), 0o644)
        _add(archive, "pins.env", render_install_env(profile, cloud).encode(), 0o644)
    return gzip.compress(raw.getvalue(), mtime=0)


def installer_parts(profile: Profile, cloud: str, nvswitch: bool, part_chars: int = PART_CHARS) -> list[str]:
    """The bundle as one-line shell commands run in order: slices of its base64 text, then the check of the
    whole archive's sha256, the unpack and the install (`nvswitch` enables the fabric manager)."""
    archive = pack(profile, cloud)
    payload = base64.b64encode(archive).decode()
    slices = [payload[start:start + part_chars] for start in range(0, len(payload), part_chars)]
    writes = [f"mkdir -p {PARTS_DIR} && printf %s '{text}' > {PARTS_DIR}/{index:03d}"
              for index, text in enumerate(slices)]
    tarball = f"{PARTS_DIR}.tar.gz"
    # A missing, reordered or altered part fails the sha256 check: nothing of a wrong bundle runs.
    finish = (
        f"cat {PARTS_DIR}/* > {PARTS_DIR}.b64 && base64 -d {PARTS_DIR}.b64 > {tarball}"
        f" && echo '{hashlib.sha256(archive).hexdigest()}  {tarball}' | sha256sum --check --strict"
        f" && mkdir -p {BUNDLE_DIR} && tar -xzf {tarball} -C {BUNDLE_DIR}"
        f" && rm -rf {PARTS_DIR} {PARTS_DIR}.b64 {tarball}"
        f" && bash {BUNDLE_DIR}/images/install/install.sh --env {BUNDLE_DIR}/pins.env"
        f" --nvswitch {'yes' if nvswitch else 'no'}"
    )
    return [*writes, finish]


def installer_command(profile: Profile, cloud: str, nvswitch: bool) -> str:
    """installer_parts as one script, for a pipeline that takes the installer whole (Azure's customizer)."""
    return "set -eu\n" + "".join(f"{part}\n" for part in installer_parts(profile, cloud, nvswitch))


def content_version(*parts: str) -> str:
    """major.minor.patch derived from the content: image pipelines version immutable artifacts (Image Builder
    components and recipes, Compute Gallery image versions), so the same input gives the same version and
    changed input a new one. The patch stays below 2^28, inside every cloud's per-part limit."""
    digest = hashlib.sha256("\0".join(parts).encode()).hexdigest()
    return f"1.0.{int(digest[:7], 16)}"
