"""Entry point the Pulumi CLI runs for `--policy-pack policies`: builds the pack and serves it.

Constructing PolicyPack starts the analyzer's gRPC server and blocks, so nothing imports this module.
"""

import sys
from pathlib import Path

# The CLI runs `python -u -m pulumi.policy ENGINE policies/` in policies/ with the pack's own venv, which holds
# requirements.txt only (pulumi-language-python RunPlugin; pulumi/policy/__main__.py runs this file with runpy):
# sys.path then has policies/ but not its parent, so neither `policies.*` nor the components/ modules the rules
# read (catalog, lock, spec) would import. The checkout's root goes first, deliberately: installing the project
# into the pack's venv (`-e ..`) would also install every provider SDK, which the pack never imports.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402
from pulumi_policy import policy as sdk  # noqa: E402

from policies.registry import ALL_POLICIES  # noqa: E402
from policies.stack_settings import DerivingServicer  # noqa: E402

# The pack's settings come from the stack it checks, as `gpufleet plan` derives them (policies/stack_settings.py):
# PolicyPack builds its servicer from this module attribute.
sdk._PolicyAnalyzerServicer = DerivingServicer  # type: ignore[misc]

PolicyPack(
    name="gpufleet",
    policies=ALL_POLICIES,
    enforcement_level=EnforcementLevel.MANDATORY,
    description="gpufleet: encryption, IMDSv2, exposure, IAM, EFA fabric, pinned images, spot, tags, budget",
)
