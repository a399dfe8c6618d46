"""The node check verifies the stack's shared Lustre file system: the bootstrap names its path in expect.json, the
check reaches the path (its fstab line is an x-systemd.automount) and then requires a `lustre` mount there.

/proc/mounts fixtures are written in proc(5)'s fstab format (spec, mount point, type, options, 0, 0): before the
first access a systemd automount point holds only `autofs` (systemd.automount(5)); a kernel without the Lustre
module leaves it so, since the mount on access fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bootstrap_node import config, node_files

from components.bootstrap import render_user_data
from components.bootstrap.operations import SharedMount
from images.nodecheck.__main__ import main
from images.nodecheck.checks import shared_mount_check
from images.nodecheck.expect import ExpectationError, parse_expectation

AUTOFS = "systemd-1 {path} autofs rw,relatime,fd=62,pgrp=1,timeout=0,minproto=5,maxproto=5,direct 0 0"
LUSTRE = "10.0.0.4@tcp:/lustrefs {path} lustre rw,flock,lazystatfs 0 0"
INSTANCE = {"gpu_model": "H100", "gpu_count": 8, "nvswitch": True, "fabric": "infiniband", "fabric_interfaces": 8}


def _expectation(shared: str | None, **extra: object) -> dict:
    document = {"profile": "p", "driver": "580.126.16", "cuda": "12.8", "fabric_manager": "580.126.16",
                "scratch_mount": None, "instance_types": {"Standard_ND96isr_H100_v5": INSTANCE}, **extra}
    if shared is not None:
        document["shared_mount"] = shared
    return document


def _proc(tmp_path: Path, *lines: str) -> Path:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "mounts").write_text("".join(f"{line}\n" for line in lines))
    return proc


def test_the_bootstrap_names_the_shared_mount_in_expect_json() -> None:
    shared = SharedMount(dns_name="192.0.2.4", mount_name="lustrefs", mount="/data")
    files = node_files(render_user_data(config("azure", shared_mount=shared)))
    assert json.loads(files["/etc/gpufleet/expect.json"]["content"])["shared_mount"] == "/data"
    files = node_files(render_user_data(config("azure")))
    assert "shared_mount" not in json.loads(files["/etc/gpufleet/expect.json"]["content"])


def test_a_mounted_lustre_file_system_passes_after_its_path_is_reached(tmp_path: Path) -> None:
    reached: list[str] = []
    proc = _proc(tmp_path, AUTOFS.format(path="/data"), LUSTRE.format(path="/data"))
    (check,) = shared_mount_check(parse_expectation(_expectation("/data")), proc, reached.append)
    assert reached == ["/data"]  # the automount is triggered before /proc/mounts is read
    assert check.ok and check.found == "lustre" and check.expected == {"path": "/data", "type": "lustre"}


@pytest.mark.parametrize(("lines", "found"), [
    ([AUTOFS.format(path="/data")], "autofs"),  # the mount on access failed (no Lustre module, no network)
    ([LUSTRE.format(path="/scratch")], None),  # Lustre elsewhere, nothing at the path
    ([], None),
])
def test_no_lustre_at_the_path_is_unhealthy(tmp_path: Path, lines: list[str], found: str | None) -> None:
    (check,) = shared_mount_check(parse_expectation(_expectation("/data")), _proc(tmp_path, *lines), lambda _: None)
    assert not check.ok and check.found == found


def test_a_stack_without_shared_storage_has_no_mount_check(tmp_path: Path) -> None:
    assert shared_mount_check(parse_expectation(_expectation(None)), _proc(tmp_path), lambda _: None) == []


def test_a_relative_shared_mount_is_an_unreadable_expectation() -> None:
    with pytest.raises(ExpectationError, match="shared_mount: expected an absolute path or null"):
        parse_expectation(_expectation("data"))


def test_the_cli_reports_a_missing_shared_mount_as_drift(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # A path the test owns, so reaching it opens a real directory; /proc/mounts shows only the automount.
    mount = tmp_path / "data"
    mount.mkdir()
    expect = tmp_path / "expect.json"
    expect.write_text(json.dumps(_expectation(str(mount))))
    proc = _proc(tmp_path, AUTOFS.format(path=mount))
    code = main(["--expect", str(expect), "--instance-type", "Standard_ND96isr_H100_v5", "--proc-root", str(proc),
                 "--sysfs-root", str(tmp_path / "sys")], nvml=None, run=lambda argv: (1, ""))
    report = json.loads(capsys.readouterr().out)
    (shared,) = [c for c in report["checks"] if c["name"] == "shared_mounted"]
    assert code == 1 and not shared["ok"] and shared["found"] == "autofs"
