"""The expectation file /etc/gpufleet/expect.json, parsed and validated with the standard library."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

FABRICS = ("efa", "infiniband", "erdma", "roce", "none")
# A GPU has at most 7 MIG instances (NVIDIA MIG user guide, Supported GPUs).
MAX_MIG_DEVICES = 7


class ExpectationError(ValueError):
    """The expectation file is unreadable or malformed; the message names the field."""


@dataclass(frozen=True)
class InstanceExpectation:
    gpu_model: str
    gpu_count: int
    nvswitch: bool
    fabric: str
    fabric_interfaces: int
    mig_devices: int = 0  # MIG devices per GPU; absent or 0: MIG is not applied and not checked


@dataclass(frozen=True)
class Expectation:
    profile: str
    driver: str
    cuda: str
    fabric_manager: str
    scratch_mount: str | None
    instance_types: dict[str, InstanceExpectation]
    shared_mount: str | None = None  # the shared Lustre path; absent or null: none
    fabric_mtu: int | None = None  # the MTU every eRDMA device's interface must have; absent or null: not checked


def _field(raw: dict, key: str, kind: type | tuple[type, ...], where: str) -> object:
    if key not in raw:
        raise ExpectationError(f"{where}{key}: missing")
    value = raw[key]
    # bool is an int in Python: refuse it where a count is expected.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ExpectationError(f"{where}{key}: expected {getattr(kind, '__name__', kind)}, got {value!r}")
    return value


def _instance(name: str, raw: object) -> InstanceExpectation:
    where = f"instance_types.{name}."
    if not isinstance(raw, dict):
        raise ExpectationError(f"instance_types.{name}: expected an object")
    fabric = _field(raw, "fabric", str, where)
    if fabric not in FABRICS:
        raise ExpectationError(f"{where}fabric: '{fabric}' is not one of {', '.join(FABRICS)}")
    count = _field(raw, "gpu_count", int, where)
    interfaces = _field(raw, "fabric_interfaces", int, where)
    if count < 1 or interfaces < 0:
        raise ExpectationError(f"{where}gpu_count/fabric_interfaces: must be >= 1 / >= 0")
    mig = _field(raw, "mig_devices", int, where) if "mig_devices" in raw else 0
    if not 0 <= mig <= MAX_MIG_DEVICES:
        raise ExpectationError(f"{where}mig_devices: must be 0 to {MAX_MIG_DEVICES}, got {mig}")
    return InstanceExpectation(
        gpu_model=_field(raw, "gpu_model", str, where),
        gpu_count=count,
        nvswitch=_field(raw, "nvswitch", bool, where),
        fabric=fabric,
        fabric_interfaces=interfaces,
        mig_devices=mig,
    )


def parse_expectation(raw: object) -> Expectation:
    if not isinstance(raw, dict):
        raise ExpectationError("<root>: expected a JSON object")
    scratch = raw.get("scratch_mount")
    if "scratch_mount" not in raw:
        raise ExpectationError("scratch_mount: missing (null when the node has no scratch)")
    if scratch is not None and not isinstance(scratch, str):
        raise ExpectationError(f"scratch_mount: expected a path or null, got {scratch!r}")
    shared = raw.get("shared_mount")
    if shared is not None and (not isinstance(shared, str) or not shared.startswith("/")):
        raise ExpectationError(f"shared_mount: expected an absolute path or null, got {shared!r}")
    mtu = raw.get("fabric_mtu")
    if mtu is not None and (not isinstance(mtu, int) or isinstance(mtu, bool) or mtu < 1):
        raise ExpectationError(f"fabric_mtu: expected a positive integer or null, got {mtu!r}")
    types = _field(raw, "instance_types", dict, "")
    if not types:
        raise ExpectationError("instance_types: empty")
    return Expectation(
        profile=_field(raw, "profile", str, ""),
        driver=_field(raw, "driver", str, ""),
        cuda=_field(raw, "cuda", str, ""),
        fabric_manager=_field(raw, "fabric_manager", str, ""),
        scratch_mount=scratch,
        instance_types={name: _instance(name, body) for name, body in types.items()},
        shared_mount=shared,
        fabric_mtu=mtu,
    )


def load_expectation(path: Path) -> Expectation:
    try:
        raw = json.loads(Path(path).read_text())
    except OSError as err:
        raise ExpectationError(f"{path}: cannot read ({err.strerror or err})") from None
    except json.JSONDecodeError as err:
        raise ExpectationError(f"{path}: not valid JSON ({err})") from None
    return parse_expectation(raw)
