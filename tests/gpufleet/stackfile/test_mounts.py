"""Mounts cannot take over a node: every mount a stack names is refused at, under or over a system directory
or a .ssh directory, however the path is written ('..', '//', '.', a trailing '/')."""

from __future__ import annotations

import copy
from typing import Any

from conftest import read_cluster
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile import SpecInvalid
from gpufleet.stackfile.mounts import SYSTEM_DIRECTORIES

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SHARED = {"kind": "lustre", "capacity_tib": 1.2}

segments = st.from_regex(r"[a-z0-9_][a-z0-9._-]{0,10}", fullmatch=True).filter(lambda s: s not in (".", ".."))


@st.composite
def spellings(draw: st.DrawFn, path: str) -> str:
    """`path` written another way: doubled slashes, '.' and 'x/..' detours, a trailing slash."""
    out = ""
    for part in path.strip("/").split("/"):
        out += "/" * draw(st.integers(1, 2))
        if draw(st.booleans()):
            out += "./" if draw(st.booleans()) else draw(segments) + "/../"
        out += part
    return out + ("/" if draw(st.booleans()) else "")


def _mount_errors(field: str, path: str) -> list[str]:
    raw = copy.deepcopy(read_cluster("aws-train-p5"))
    storage: dict[str, Any] = raw.setdefault("storage", {})
    if field == "shared":
        storage["shared"] = {**SHARED, "mount": path}
    else:
        storage["scratch_mount"] = path
    try:
        resolve_cluster(raw)
    except SpecInvalid as caught:
        wanted = "storage.shared.mount" if field == "shared" else "storage.scratch_mount"
        return [str(e) for e in caught.errors if str(e).startswith(wanted)]
    return []


@st.composite
def under_system(draw: st.DrawFn) -> str:
    base = draw(st.sampled_from([*SYSTEM_DIRECTORIES, "/"]))
    # "/" is refused itself; below it is every path, which the other tests judge.
    rest = [] if base == "/" else draw(st.lists(segments, max_size=3))
    return "/".join([base.rstrip("/"), *rest]) or "/"


@SETTINGS
@given(st.sampled_from(["scratch", "shared"]), under_system().flatmap(spellings))
def test_system_directories_and_below_are_refused(field: str, path: str) -> None:
    assert _mount_errors(field, path), path


@SETTINGS
@given(st.sampled_from(["scratch", "shared"]), st.lists(segments, max_size=3), st.lists(segments, max_size=2))
def test_any_ssh_directory_is_refused(field: str, before: list[str], after: list[str]) -> None:
    path = "/" + "/".join(["home", *before, ".ssh", *after])
    assert _mount_errors(field, path), path


@SETTINGS
@given(st.sampled_from(["scratch", "shared"]), st.sampled_from(["/opt", "/home"]))
def test_a_mount_over_a_system_directory_is_refused(field: str, path: str) -> None:
    assert _mount_errors(field, path)


@SETTINGS
# Mount points on a node, not on this machine.
@given(st.sampled_from(["/data", "/scratch", "/mnt", "/fsx", "/tmp", "/home/alice"]),  # machine-path-ok
       st.lists(segments, max_size=2))
def test_a_directory_of_its_own_passes(base: str, rest: list[str]) -> None:
    assert _mount_errors("scratch", "/".join([base, *rest])) == []


def test_message_names_the_field_and_the_resolved_path() -> None:
    (error,) = _mount_errors("shared", "/data/../etc/cron.d")
    assert error.startswith("storage.shared.mount") and "(that is /etc/cron.d)" in error and "/etc" in error
