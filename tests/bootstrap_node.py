"""Shared by the bootstrap tests: configs per cloud, rendered files, and a node under tmp_path with stub commands."""

from __future__ import annotations

import base64
import gzip
import subprocess
from dataclasses import replace
from pathlib import Path

import libyaml_files

from components.bootstrap import (
    BootstrapConfig,
    ExpectedType,
    LifecycleHooks,
    render_user_data,
)

H100 = ExpectedType(gpu_model="H100", gpu_count=8, nvswitch=True, fabric="efa", fabric_interfaces=32)
H200 = ExpectedType(gpu_model="H200", gpu_count=8, nvswitch=True, fabric="efa", fabric_interfaces=32)
H200_EN = ExpectedType(gpu_model="H200", gpu_count=8, nvswitch=True, fabric="efa", fabric_interfaces=16)
A100 = ExpectedType(gpu_model="A100", gpu_count=8, nvswitch=True, fabric="efa", fabric_interfaces=4)
LIFECYCLE = LifecycleHooks(
    region="us-east-1",
    group_name="train-h100-asg",
    launch_hook="train-h100-launch",
    terminate_hook="train-h100-terminate",
)
STUBBED = (
    "lsblk",
    "nvme",
    "mdadm",
    "mkfs.xfs",
    "mount",
    "mountpoint",
    "blkid",
    "curl",
    "aws",
    "gpufleet-nodecheck",
    "dcgmi",
    "journalctl",
)


JOURNALCTL = """for a; do [[ $a == --cursor-file=* ]] && f=${a#*=}; done
seen=$(cat "$f" 2>/dev/null || echo 0)
tail -n "+$((seen + 1))" "$FAKE/kmsg"
wc -l < "$FAKE/kmsg" > "$f"
"""
# Kernel lines as the NVIDIA driver logs them, recorded on real nodes: the XID 13s and 109 and the line before
# them from leptonai/gpud PR #46 (components/accelerator/nvidia/error/xid/README.md, dmesg of 2024-08-30), the
# XID 79 from NVIDIA/NVSentinel issue #155. Timestamps cut, as `journalctl -o cat` prints them.
KERNEL_LINES = (Path(__file__).parent / "data/nvrm-xid-kernel-lines.txt").read_text().splitlines()


def xid_lines(*codes: int) -> list[str]:
    """One recorded kernel line per XID code."""
    return [next(line for line in KERNEL_LINES if f"): {code}," in line) for code in codes if code]


def config(cloud: str = "aws", **changes: object) -> BootstrapConfig:
    """A p5 group with three fallback types, or a one-type group on Azure / Alibaba."""
    expected = {
        "aws": {"p5.48xlarge": H100, "p5e.48xlarge": H200, "p5en.48xlarge": H200_EN, "p4d.24xlarge": A100},
        "azure": {"Standard_ND96isr_H100_v5": replace(H100, fabric="infiniband", fabric_interfaces=8)},
        "alicloud": {"ecs.ebmgn8v.48xlarge": replace(H100, fabric="erdma", fabric_interfaces=2)},
    }[cloud]
    base = BootstrapConfig(
        cloud=cloud,
        cluster="train",
        node_group="h100",
        image_profile="cuda12.8-r570",
        driver="570.133.20",
        cuda="12.8",
        fabric_manager="570.133.20",
        expected=expected,
        scratch="raid0",
        scratch_mount="/scratch",
        checkpoint_hook="/opt/train/checkpoint.sh --reason 'spot'",
        checkpoint_grace_seconds=300,
        lifecycle=LIFECYCLE if cloud == "aws" else None,
    )
    return replace(base, **changes)


def sent_user_data(encoded: str) -> str:
    """Base64 user data as cloud-init reads it: gunzipped where it is gzip (cloud-init detects the magic bytes)."""
    raw = base64.b64decode(encoded)
    return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode()


def node_files(user_data: str) -> dict[str, dict]:
    """Each written file by path, its content as cloud-init writes it (gz+b64 entries decoded)."""
    assert user_data.startswith("#cloud-config\n")
    document = libyaml_files.load(user_data)
    files = {}
    for entry in document["write_files"]:
        if entry.get("encoding") == "gz+b64":
            entry = {**entry, "content": gzip.decompress(base64.b64decode(entry["content"])).decode()}
        files[entry["path"]] = entry
    return files


def install(user_data: str, root: Path) -> Path:
    """Write the rendered files under root, as cloud-init would under /."""
    for path, entry in node_files(user_data).items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(entry["content"])
        target.chmod(int(entry["permissions"], 8))
    return root


class Node:
    """A rendered node under tmp_path with stub commands that log their argv to one file."""

    def __init__(self, tmp_path: Path, cfg: BootstrapConfig) -> None:
        self.root = install(render_user_data(cfg), tmp_path / "node")
        self.fake = tmp_path / "fake"
        self.stubs = tmp_path / "stubs"
        self.log = tmp_path / "calls.log"
        (self.fake / "children").mkdir(parents=True)
        self.stubs.mkdir()
        self.log.touch()
        settings = self.root / "etc/gpufleet/bootstrap.env"
        settings.write_text(
            settings.read_text().replace(
                "GPUFLEET_SCRATCH_MOUNT=/scratch", f"GPUFLEET_SCRATCH_MOUNT={tmp_path}/scratch"
            )
        )
        self.scratch = tmp_path / "scratch"
        for name in STUBBED:
            self.stub(name, "exit 0")
        self.stub("mountpoint", "exit 1")
        self.stub("blkid", "exit 2")
        self.stub("mdadm", "[[ $1 == --assemble ]] && exit 1; exit 0")
        self.stub("lsblk", '[[ $1 == -d ]] && exec cat "$FAKE/disks"; cat "$FAKE/children/${!###*/}"')
        self.stub(
            "curl",
            "url=${!#}\nwhile IFS=$'\\t' read -r key body; do\n"
            '  [[ $url == *"$key"* ]] && { printf "%s" "$body"; exit 0; }\n'
            'done < "$FAKE/curl.tsv"\nexit 22',
        )
        (self.fake / "curl.tsv").write_text("")

    def stub(self, name: str, body: str) -> None:
        path = self.stubs / name
        path.write_text(f'#!/bin/bash\necho "{name} $*" >> "$STUB_LOG"\n{body}\n')
        path.chmod(0o755)

    def disks(
        self, *rows: tuple[str, str, str], children: dict[str, list[tuple[str, str, str]]] | None = None
    ):
        """rows: (name, type, model); children: name -> (name, type, mountpoint) below the disk."""
        self.fake.joinpath("disks").write_text(
            "".join(f'NAME="{n}" TYPE="{t}" MODEL="{m}"\n' for n, t, m in rows)
        )
        for name, kind, _ in rows:
            below = [(name, kind, "")] + (children or {}).get(name, [])
            self.fake.joinpath("children", name).write_text(
                "".join(f'NAME="{n}" TYPE="{t}" MOUNTPOINT="{p}"\n' for n, t, p in below)
            )

    def kernel_log(self, lines: list[str]) -> None:
        """The kernel's log so far, as `journalctl -k --cursor-file` reads it: the lines after the place the file
        holds, then the new place in it."""
        self.fake.joinpath("kmsg").write_text("".join(f"{line}\n" for line in lines))
        self.stub("journalctl", JOURNALCTL)

    def curl(self, responses: dict[str, str]) -> None:
        self.fake.joinpath("curl.tsv").write_text("".join(f"{k}\t{v}\n" for k, v in responses.items()))

    def run(self, program: str, *args: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
        env = {
            **extra_env,
            "PATH": f"{self.stubs}:/usr/bin:/bin",
            "STUB_LOG": str(self.log),
            "FAKE": str(self.fake),
            "GPUFLEET_ETC": str(self.root / "etc/gpufleet"),
            "GPUFLEET_RUN": str(self.root / "run/gpufleet"),
            "GPUFLEET_LIB": str(self.root / "usr/local/lib/gpufleet"),
        }
        return subprocess.run(
            ["bash", str(self.root / "usr/local/sbin" / program), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines()


# Rendering


