"""What a cloud-config user data document writes: its `write_files` entries decoded as cloud-init decodes them.

The user data itself is read by props.base64_text (base64, gzip unpacked); here the document and its files.
Encodings are cloud-init's (canonical/cloud-init cloudinit/config/cc_write_files.py, canonicalize_extraction):
gz / gzip (binary), gz+base64 / gzip+base64 / gz+b64 / gzip+b64, base64 / b64; anything else is plain text.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import shlex
from typing import Any

from .props import UNKNOWN

CLOUD_CONFIG = "#cloud-config"
_GZIP = ("gz", "gzip")
_GZIP_BASE64 = ("gz+base64", "gzip+base64", "gz+b64", "gzip+b64")
_BASE64 = ("base64", "b64")
# A node's bootstrap settings name its group (components/bootstrap/cloud_init.py).
BOOTSTRAP_SETTINGS = "/etc/gpufleet/bootstrap.env"
GROUP_SETTING = "GPUFLEET_NODE_GROUP"


def cloud_config(text: Any) -> Any:
    """The cloud-config document of user data text: UNKNOWN while unknown, None when it is not one (a script,
    multipart) or does not parse."""
    if text is UNKNOWN:
        return UNKNOWN
    if not isinstance(text, str) or not text.startswith(CLOUD_CONFIG):
        return None
    # Imported here, not with the pack: `gpufleet policies` lists the rules and reads no user data (~20 ms of it).
    import yaml

    from gpufleet.yaml_libyaml import SAFE_LOADER

    try:
        # libyaml's parser under PyYAML's safe constructor: yaml.safe_load's values, ~5x faster (a plan's rules read
        # each node's user data; ~20 ms of an AWS plan through the pure reader).
        document = yaml.load(text, Loader=SAFE_LOADER)  # noqa: S506 (SAFE_LOADER is a safe loader)
    except yaml.YAMLError:
        return None
    return document if isinstance(document, dict) else None


def _decoded(entry: dict[str, Any]) -> str | None:
    content, encoding = entry.get("content", ""), str(entry.get("encoding") or "").lower()
    try:
        if encoding in _GZIP_BASE64:
            raw = gzip.decompress(base64.b64decode(content))
        elif encoding in _BASE64:
            raw = base64.b64decode(content)
        elif encoding in _GZIP:
            raw = gzip.decompress(content if isinstance(content, bytes) else content.encode("latin-1"))
        else:
            return content if isinstance(content, str) else None
    except (binascii.Error, ValueError, TypeError, OSError, EOFError):
        return None
    return raw.decode("utf-8", "replace")


def written_files(text: Any) -> Any:
    """path -> content of every file the user data's cloud-config writes (an entry that does not decode is left
    out); UNKNOWN while the user data is unknown, {} for user data that is not cloud-config."""
    document = cloud_config(text)
    if document is UNKNOWN:
        return UNKNOWN
    entries = (document or {}).get("write_files")
    found: dict[str, str] = {}
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("path"), str):
            content = _decoded(entry)
            if content is not None:
                found[entry["path"]] = content
    return found


def munge_key_files(files: Any) -> list[str]:
    """The written files that hold a munge key (a path naming munge, ending .key); [] while the user data is
    unknown."""
    return [path for path in files if "munge" in path.lower() and path.endswith(".key")] if isinstance(
        files, dict) else []


def file_named(files: dict[str, str], name: str) -> str | None:
    """The content of the written file called `name` (its last path part), if any."""
    return next((content for path, content in files.items() if path.rsplit("/", 1)[-1] == name), None)


def node_group_of(files: Any) -> str | None:
    """The node group the written bootstrap settings name (GPUFLEET_NODE_GROUP, as the shell reads it); None
    without one or while the user data is unknown."""
    settings = files.get(BOOTSTRAP_SETTINGS) if isinstance(files, dict) else None
    for line in (settings or "").splitlines():
        key, equals, value = line.partition("=")
        if equals and key.strip() == GROUP_SETTING:
            try:
                words = shlex.split(value, comments=True)
            except ValueError:  # unbalanced quotes: no group the shell would read either
                continue
            if words:
                return words[0]
    return None
