"""CLI: python -m images.nodecheck --expect PATH [--instance-type T] [--sysfs-root DIR] [--proc-root DIR]
[--fabric-manager service|process] [--format json|text]. Exit 0 healthy, 1 drift or unhealthy, 2 usage or
unreadable expectation."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

from .checks import (
    FABRIC_MANAGER_PROBES,
    Check,
    cuda_check,
    fabric_manager_checks,
    gpu_checks,
    nvswitch_check,
    rdma_checks,
    scratch_check,
    shared_mount_check,
)
from .cuda import CudaReading, probe_cuda
from .expect import ExpectationError, load_expectation
from .gpus import read_gpus
from .host import Runner, nvswitch_devices, run_command
from .metadata import instance_type_from_metadata

EXIT_HEALTHY, EXIT_DRIFT, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 on usage errors, as the contract says
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"gpufleet-nodecheck: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gpufleet-nodecheck", description="Compare this GPU node with its expectation.")
    parser.add_argument("--expect", type=Path, required=True, help="e.g. /etc/gpufleet/expect.json")
    parser.add_argument("--instance-type", help="instance type; read from cloud metadata when omitted")
    parser.add_argument("--sysfs-root", type=Path, default=Path("/sys"))
    parser.add_argument("--proc-root", type=Path, default=Path("/proc"))
    parser.add_argument("--fabric-manager", choices=FABRIC_MANAGER_PROBES, default="service",
                        help="NVSwitch types: the systemd unit and binary (service), or a running process under "
                        "--proc-root (process: in a pod)")
    parser.add_argument("--format", choices=("json", "text"), default="json")
    return parser


def _render(checks: list[Check], fmt: str) -> str:
    healthy = all(c.ok for c in checks)
    if fmt == "json":
        return json.dumps({"healthy": healthy, "checks": [c.as_dict() for c in checks]}, sort_keys=True)
    lines = [f"{'ok  ' if c.ok else 'FAIL'} {c.name}: expected {c.expected}, found {c.found}" for c in checks]
    return "\n".join([*lines, "healthy" if healthy else "unhealthy"])


def main(
    argv: Sequence[str] | None = None, *, nvml: ModuleType | None = None, run: Runner = run_command,
    cuda: Callable[[], CudaReading] = probe_cuda,
) -> int:
    args = _parser().parse_args(argv)
    try:
        expect = load_expectation(args.expect)
    except ExpectationError as err:
        print(f"gpufleet-nodecheck: {err}", file=sys.stderr)
        return EXIT_USAGE
    instance_type = args.instance_type or instance_type_from_metadata()
    inst = expect.instance_types.get(instance_type or "")
    if inst is None:
        checks = [Check("instance_type", False, sorted(expect.instance_types), instance_type)]
    else:
        nvswitches = nvswitch_devices(args.sysfs_root)
        checks = [
            Check("instance_type", True, instance_type, instance_type),
            *gpu_checks(expect, inst, read_gpus(nvml, mig=inst.mig_devices > 0)),
            *cuda_check(inst, cuda()),
            *nvswitch_check(inst, nvswitches),
            *fabric_manager_checks(expect, inst, run, args.fabric_manager, args.proc_root, nvswitches),
            *rdma_checks(inst, args.sysfs_root, expect.fabric_mtu),
            *scratch_check(expect, args.proc_root),
            *shared_mount_check(expect, args.proc_root),
        ]
    print(_render(checks, args.format))
    return EXIT_HEALTHY if all(c.ok for c in checks) else EXIT_DRIFT


if __name__ == "__main__":
    sys.exit(main())
