"""The pack in parts: the registry merges each cloud's rules and readers with the common rules."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import REPO

from gpufleet.catalog import CLOUDS as CATALOG_CLOUDS
from gpufleet.plan.policy_catalog import policy_catalog
from gpufleet.plan.policy_runner import run_policies
from gpufleet.plan.record import RecordedResource
from policies import alicloud, common
from policies import aws as aws_policies
from policies import azure as azure_policies
from policies import kubernetes as kubernetes_policies
from policies.cloud import Readers
from policies.registry import CLOUDS, READERS, RULES, RULES_BY_NAME

ROOT = REPO
AWS_MODULES = tuple(getattr(aws_policies, name) for name in ("encryption", "exposure", "identity", "images", "spot",
                                                              "fabric", "operations", "logs", "eks", "slurm_munge",
                                                              "slurm_exposure", "slurm_fabric"))
AZURE_MODULES = tuple(getattr(azure_policies, name) for name in ("aks", "encryption", "exposure", "identity", "images",
                                                                  "spot", "fabric", "operations", "slurm_munge",
                                                                  "slurm_exposure"))
PROVIDER_TOKEN = re.compile(r"[\"'](aws|azure-native|alicloud):")


def test_registry_holds_every_rule_of_every_part_once() -> None:
    from_parts = [rule.name for module in (*AWS_MODULES, *AZURE_MODULES) for rule in module.RULES]
    from_parts += [rule.name for rule in alicloud.POLICIES.rules]
    from_parts += [rule.name for rule in kubernetes_policies.POLICIES.rules]
    from_parts += [rule.name for rule in common.rules(READERS)]
    assert sorted(from_parts) == sorted(RULES_BY_NAME) and len(RULES) == len(from_parts)
    assert {rule.cloud for rule in RULES} == {"aws", "azure", "alicloud", "kubernetes", "any"}
    assert all(rule.cloud == "any" for rule in common.rules(READERS))


def test_python_c_lists_the_pack_without_starting_the_analyzer() -> None:
    # What the Pulumi CLI's `__main__.py` hands to PolicyPack, built by a plain import: a started analyzer
    # server would block until the timeout.
    result = subprocess.run(
        [sys.executable, "-c", "from policies.registry import ALL_POLICIES; print(*(p.name for p in ALL_POLICIES))"],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [rule.name for rule in RULES]


def test_every_catalog_cloud_has_a_policy_package() -> None:
    assert [cloud.cloud for cloud in CLOUDS] == list(CATALOG_CLOUDS)


def test_common_rules_know_no_cloud() -> None:
    for path in sorted((ROOT / "policies" / "common").glob("*.py")):
        text = path.read_text()
        assert not PROVIDER_TOKEN.search(text), path.name
        assert not re.search(r"^from \.\.(aws|azure|alicloud)\b|^import policies\.(aws|azure|alicloud)", text, re.M)


def test_allowed_types_read_every_clouds_readers() -> None:
    vmss = RecordedResource(
        urn="urn:pulumi:dev::gpufleet::azure-native:compute:VirtualMachineScaleSet::ib",
        type="azure-native:compute:VirtualMachineScaleSet",
        name="ib",
        parent=None,
        depends_on=(),
        inputs={"sku": {"name": "Standard_ND96isr_H100_v5", "capacity": 2}},
        custom=True,
    )
    report = run_policies(
        [vmss], {"allowed-instance-types": {"types": ["p5.48xlarge"]}}, [RULES_BY_NAME["allowed-instance-types"].policy]
    )
    assert [(v.urn, v.message.split(":")[0]) for v in report.violations] == [
        (vmss.urn, "instance types Standard_ND96isr_H100_v5 are not allowed here")
    ]


def test_two_clouds_cannot_read_one_resource_type() -> None:
    token = "aws:ec2/instance:Instance"
    with pytest.raises(RuntimeError, match=f"two clouds read the same resource type: {re.escape(token)}"):
        Readers.merge([Readers(types={token: lambda node: []}), Readers(types={token: lambda node: []})])


def test_readme_lists_each_rule_under_its_cloud() -> None:
    readme = (ROOT / "policies" / "README.md").read_text()
    section = None
    seen: dict[str, str | None] = {}
    for line in readme.splitlines():
        heading = re.match(r"### (\S+)", line)
        if heading:
            section = {"Every": "any"}.get(heading.group(1), heading.group(1))
        found = re.match(r"\| `([a-z0-9-]+)` \|", line)
        if found:
            seen[found.group(1)] = section
    assert seen == {row["name"]: row["cloud"] for row in policy_catalog()}
