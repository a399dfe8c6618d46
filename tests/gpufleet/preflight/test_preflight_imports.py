"""`plan` never loads a cloud SDK: only `gpufleet preflight` imports boto3 (and the other clouds' SDKs), inside
the command. Checked in a fresh interpreter, where nothing else has imported them."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO

SDK_ROOTS = ("boto3", "botocore", "azure.mgmt", "alibabacloud_ecs20140526", "alibabacloud_tea_openapi")


def test_plan_never_imports_a_cloud_sdk() -> None:
    code = (
        "import sys\n"
        "from gpufleet.cli import app\n"
        "try:\n"
        "    app(['plan', '--stack', 'aws-infer-g6e', '--format', 'json'])\n"
        "except SystemExit as done:\n"
        "    assert done.code == 0, done.code\n"
        f"print(sorted(m for m in sys.modules if m.startswith({SDK_ROOTS!r}) "
        "or m.startswith('gpufleet.preflight.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
