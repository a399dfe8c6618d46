"""Entry point the Pulumi CLI runs for `--policy-pack policies`: builds the pack and serves it.

Constructing PolicyPack starts the analyzer's gRPC server and blocks, so nothing imports this module.
"""

import sys
from pathlib import Path

# The CLI runs the pack from policies/; the rules import components.catalog and components.lock.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402

from policies.registry import ALL_POLICIES  # noqa: E402

PolicyPack(
    name="gpufleet",
    policies=ALL_POLICIES,
    enforcement_level=EnforcementLevel.MANDATORY,
    description="gpufleet: encryption, IMDSv2, exposure, IAM, EFA fabric, pinned images, spot, tags, budget",
)
