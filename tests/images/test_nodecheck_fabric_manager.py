"""The fabric manager probe: the node's systemd unit and binary at boot, a running process of the binary under
--proc-root in a pod (which has neither). The process probe is tried on this machine's real /proc too."""

from __future__ import annotations

import shlex
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from kubernetes_objects import EXPECTATIONS, IB

from components.kubernetes.node_check import node_check_objects
from gpufleet.lock import load_lock
from images.nodecheck.__main__ import _parser
from images.nodecheck.checks import fabric_manager_checks
from images.nodecheck.expect import Expectation, InstanceExpectation
from images.nodecheck.host import fabric_manager_running

EXPECT = Expectation(profile="cuda12.8-r580", driver="580.126.16", cuda="12.8.1", fabric_manager="580.126.16",
                     scratch_mount=None, instance_types={})
NVSWITCH = InstanceExpectation(gpu_model="H100", gpu_count=8, nvswitch=True, fabric="infiniband", fabric_interfaces=8)


def no_commands(argv: Sequence[str]) -> tuple[int, str]:
    raise AssertionError(f"a pod has no {argv[0]}: the process probe must not run it")


def proc_tree(root: Path, processes: dict[str, bytes]) -> Path:
    """A /proc laid out as procfs does: one directory per PID with its NUL-separated cmdline, plus other entries."""
    (root / "self").mkdir(parents=True)
    (root / "mounts").write_text("")
    for pid, cmdline in processes.items():
        (root / pid).mkdir()
        (root / pid / "cmdline").write_bytes(cmdline)
    return root


@pytest.mark.parametrize(("cmdline", "running"), [
    (b"/usr/bin/nv-fabricmanager\0-c\0/usr/share/nvidia/nvswitch/fabricmanager.cfg\0", True),  # ACK host systemd
    (b"nv-fabricmanager\0-c\0/usr/share/nvidia/nvswitch/fabricmanager.cfg\0", True),  # the driver container's
    (b"nv-fabricmanage\0", False),  # comm's 15-character cut is not the binary
    (b"/usr/bin/python3\0nv-fabricmanager\0", False),  # the name as an argument is not the process
    (b"", False),  # a kernel thread
])
def test_a_running_fabric_manager_is_found_by_its_binary_among_the_processes(
        tmp_path: Path, cmdline: bytes, running: bool) -> None:
    root = proc_tree(tmp_path, {"1": b"/sbin/init\0", "4242": cmdline})
    assert fabric_manager_running(root) is running
    checks = fabric_manager_checks(EXPECT, NVSWITCH, no_commands, "process", root)
    assert [(c.name, c.ok, c.found) for c in checks] == [
        ("fabric_manager_running", running, "running" if running else "not running")]


def test_the_process_probe_reads_a_real_procfs() -> None:
    # A real process whose argv[0] is the binary's name, then gone: what a pod sees in the host's /proc.
    proc = subprocess.Popen(["bash", "-c", "exec -a nv-fabricmanager sleep 60"])
    try:
        deadline = time.monotonic() + 10
        while not fabric_manager_running(Path("/proc")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert fabric_manager_running(Path("/proc"))
    finally:
        proc.kill()
        proc.wait()
    assert not fabric_manager_running(Path("/proc"))


def test_at_boot_the_service_and_its_binarys_version_are_checked() -> None:
    answers = {"systemctl": (0, "active\n"), "nv-fabricmanager": (0, "Fabric Manager version is : 580.126.16\n")}
    checks = fabric_manager_checks(EXPECT, NVSWITCH, lambda argv: answers[argv[0]])
    assert [(c.name, c.ok) for c in checks] == [("fabric_manager_active", True), ("fabric_manager_version", True)]


def test_a_type_without_nvswitch_has_no_fabric_manager_check(tmp_path: Path) -> None:
    plain = InstanceExpectation(gpu_model="A10", gpu_count=1, nvswitch=False, fabric="none", fabric_interfaces=0)
    assert fabric_manager_checks(EXPECT, plain, no_commands, "process", proc_tree(tmp_path, {})) == []


def test_the_daemonset_runs_the_check_with_the_process_probe_and_the_check_takes_its_arguments() -> None:
    objects = node_check_objects((IB,), load_lock().kubernetes_components, EXPECTATIONS)
    init = next(c for o in objects if o["kind"] == "DaemonSet"
                for c in o["spec"]["template"]["spec"]["initContainers"] if c["name"] == "node-check")
    words = shlex.split(init["command"][2])
    start = words.index("images.nodecheck") + 1
    args = _parser().parse_args(words[start:words.index("&&")])
    assert args.fabric_manager == "process" and args.proc_root == Path("/host/proc")
    mounts = {m["mountPath"]: m for m in init["volumeMounts"]}
    assert mounts["/host/proc"]["readOnly"] is True
