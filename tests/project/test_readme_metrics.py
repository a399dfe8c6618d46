"""The README's table of gpu-health metrics names every metric the node script publishes, and nothing else."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def published_by_gpu_health() -> set[str]:
    script = (ROOT / "components/bootstrap/scripts/gpu-health.sh").read_text()
    calls = re.findall(r"^\s*publish ((?:.*\\\n)*.*)$", script, flags=re.MULTILINE)
    return {name for call in calls for name in re.findall(r"(\w+)=", call)}


def readme_metric_table() -> set[str]:
    readme = (ROOT / "README.md").read_text()
    table = readme.split("| metric | source | meaning |", 1)[1].split("\n\n", 1)[0]
    return {name for row in table.splitlines()[2:] for name in re.findall(r"`(\w+)`", row.split("|")[1])}


def test_the_readme_lists_every_metric_gpu_health_publishes() -> None:
    published = published_by_gpu_health()
    assert "dcgm_up" in published  # the parse found the publish calls
    assert readme_metric_table() == published
