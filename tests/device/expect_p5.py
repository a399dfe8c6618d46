"""Print the expect.json a node of aws-train-p5's first group is checked against (tests/device/node_check_on_gpu.sh
carries it to a lent GPU machine, which has none of the project's dependencies)."""

from __future__ import annotations

import json
from pathlib import Path

from components.bootstrap.cloud_init import expect_document
from components.bootstrap.for_group import group_bootstrap
from gpufleet.prepare import prepare
from gpufleet.stackfile.read import load_stack

REPO = Path(__file__).resolve().parents[2]

if __name__ == "__main__":
    cluster = prepare(load_stack(REPO / "stacks" / "Pulumi.aws-train-p5.yaml"))
    print(json.dumps(expect_document(group_bootstrap(cluster, cluster.groups[0])), indent=1, sort_keys=True))
