"""Image Builder component documents of an image profile: one per installer part that only writes its slice, then
the installing component (install, reboot, check on the build and test instances)."""

from __future__ import annotations

import yaml

from gpufleet.lock.bundle import image_check
from gpufleet.yaml_libyaml import SAFE_DUMPER


class _NoAliasDumper(SAFE_DUMPER):  # type: ignore[misc,valid-type]  # libyaml's emitter: ~25x the pure one's speed
    """Writes a repeated object out again instead of as an &anchor / *alias, which Image Builder's
    component document parser does not take."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def part_document(profile: str, index: int, command: str) -> dict[str, object]:
    """The component of one bundle part that precedes the install: it only writes its slice."""
    return {
        "name": f"gpufleet-{profile}-part{index}",
        "description": f"Part {index} of the installer bundle of image profile {profile}",
        "schemaVersion": 1.0,
        "phases": [{"name": "build", "steps": [
            {"name": "WriteBundlePart", "action": "ExecuteBash", "inputs": {"commands": [command]}}]}],
    }


def component_document(profile: str, installer_script: str) -> dict[str, object]:
    """The installing component: install, reboot into the image's kernel, then check on build and test instances."""
    # One command: AWSTOE takes an ExecuteBash step's result from its script's last command, so the check is one
    # script that stops at its first failure (image-check.sh, set -e), run on the kernel the instance booted.
    check = [
        {"name": "BootKernelModulesAndNodeTools", "action": "ExecuteBash",
         "inputs": {"commands": [image_check(booted=True)]}}
    ]
    return {
        "name": f"gpufleet-{profile}",
        "description": f"Install the pinned GPU driver stack of image profile {profile}",
        "schemaVersion": 1.0,
        "phases": [
            {
                "name": "build",
                "steps": [
                    {
                        "name": "InstallDriverStack",
                        "action": "ExecuteBash",
                        "inputs": {"commands": [installer_script]},
                    },
                    {"name": "RebootIntoDriver", "action": "Reboot"},
                ],
            },
            {"name": "validate", "steps": check},
            {"name": "test", "steps": check},
        ],
    }


def build_documents(profile: str, installer_parts: list[str]) -> list[str]:
    """The recipe's component documents in run order, as YAML with every repeated part written out in full."""
    *writes, install = installer_parts
    documents = [*(part_document(profile, i, c) for i, c in enumerate(writes)), component_document(profile, install)]
    return [yaml.dump(d, Dumper=_NoAliasDumper, sort_keys=False, width=1000) for d in documents]
