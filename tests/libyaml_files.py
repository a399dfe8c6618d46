"""yaml.safe_load and yaml.safe_dump on libyaml, for the YAML tests read and write themselves (lock copies, stack
files, cloud-configs): PyYAML's same safe constructor and representer, so the same values, ~5-10x faster. Tests that
rewrote the shipped lock with the pure emitter spent ~0.1 s a copy on it."""

from __future__ import annotations

from typing import IO, Any

import yaml

from gpufleet.yaml_libyaml import SAFE_DUMPER, SAFE_LOADER


def load(text: str | bytes | IO[str]) -> Any:
    return yaml.load(text, Loader=SAFE_LOADER)


def dump(data: Any, **options: Any) -> str:
    return yaml.dump(data, Dumper=SAFE_DUMPER, **options)
