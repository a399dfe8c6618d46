"""Mermaid's own parser (tests/mermaid: mermaid and jsdom at pinned versions, `npm ci` there), run under node on a
batch of diagram sources: one node process per batch, a verdict per source."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

PARSER = Path(__file__).resolve().parent / "mermaid"


def mermaid_verdicts(sources: list[str]) -> list[dict[str, Any]]:
    """{"ok": True, "type": ...} or {"ok": False, "error": <the parser's message>} per source."""
    node = shutil.which("node")
    assert node, "node (>= 20) not found: Mermaid's parser runs under node; install it, then `npm ci` in tests/mermaid"
    assert (PARSER / "node_modules" / "mermaid").is_dir(), "Mermaid's parser is not installed: run `npm ci` in " \
        "tests/mermaid (.ci/run does)"
    done = subprocess.run([node, str(PARSER / "parse.mjs")], input=json.dumps(sources), capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    verdicts: list[dict[str, Any]] = json.loads(done.stdout)
    assert len(verdicts) == len(sources)
    return verdicts
