"""Files and units added to a cloud-config: a node group's rendered one (the Slurm join) or a machine's own (the
Slurm head node), and the gzip that keeps such user data under the cloud's cap.

cloud-init uncompresses gzip-compressed user data and uses it as if it were not compressed
(help.ubuntu.com/community/CloudInit, "User Data Input Formats": "Gzip Compressed Content"); eks_join.py packs the
EKS nodes' user data the same way.
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from typing import Any

import yaml

from gpufleet.yaml_libyaml import SAFE_LOADER

from .cloud_init import _file, _LiteralDumper, _packed_file, user_data_limit
from .errors import BootstrapError

Files = dict[str, tuple[str, str]]
"""path -> (mode, text)."""


def write_files(files: Files, pack: bool = True) -> list[dict[str, str]]:
    """cloud-init write_files entries; with `pack`, each gzipped where that makes it shorter."""
    entries = []
    for path, (mode, text) in files.items():
        packed = _packed_file(path, text, mode) if pack else None
        entries.append(packed if packed and len(packed["content"]) < len(text) else _file(path, text, mode))
    return entries


def add_unit(runcmd: list[Any], verb: str, unit: str) -> None:
    """Append `unit` to the runcmd line `systemctl <verb> ...` (enable, start)."""
    for line in runcmd:
        if isinstance(line, list) and line[:2] == ["systemctl", verb]:
            line.append(unit)
            return
    raise BootstrapError(f"user data: no `systemctl {verb}` line to add {unit} to")


def _dump(document: dict[str, Any]) -> str:
    return "#cloud-config\n" + yaml.dump(document, Dumper=_LiteralDumper, sort_keys=False, width=1000)


def cloud_config_with(user_data: str, files: Files, units: Sequence[str]) -> str:
    """A rendered cloud-config (render_user_data's) with `files` written and `units` enabled and started."""
    if not user_data.startswith("#cloud-config\n"):
        raise BootstrapError("user data: not a #cloud-config document")
    document = yaml.load(user_data, Loader=SAFE_LOADER)
    document["write_files"] += write_files(files)
    for unit in units:
        add_unit(document["runcmd"], "enable", unit)
        add_unit(document["runcmd"], "start", unit)
    return _dump(document)


def cloud_config_of(files: Files, units: Sequence[str]) -> str:
    """A machine's own cloud-config: `files` as they are (the whole document is gzipped, gzip_user_data), then
    `units` enabled and started (--no-block: cloud-init's own unit must not wait on units ordered after the
    network)."""
    return _dump({
        "write_files": write_files(files, pack=False),
        "runcmd": [["systemctl", "daemon-reload"], ["systemctl", "enable", *units],
                   ["systemctl", "start", "--no-block", *units]],
    })


def gzip_user_data(text: str, cloud: str, what: str, remedy: str) -> bytes:
    """`text` gzipped (mtime 0: the same bytes every render); BootstrapError naming `what` and the `remedy` when even
    compressed it is over the cloud's user data limit."""
    packed = gzip.compress(text.encode(), mtime=0)
    limit = user_data_limit(cloud)
    if len(packed) > limit:
        raise BootstrapError(f"user data: {len(packed)} bytes gzipped is over {cloud}'s {limit}-byte user data "
                             f"limit ({what}); {remedy}")
    return packed
