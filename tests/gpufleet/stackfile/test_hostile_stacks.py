"""Crafted stack files, as a careless or hostile team member would write them, in every class the gate holds:
settings, ranges, keys, wildcards, budget, mounts, side doors, tags, fuzz. Each is planned the way a user plans
it (`gpufleet plan`) and must be refused: exit 2 naming the field, or exit 1 naming the mandatory rule."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from typer.testing import CliRunner

from gpufleet.cli import app

OTHER = "444455556666"
KEY = "1234abcd-12ab-34cd-56ef-1234567890ab"
SUB_A, SUB_B = "00000000-0000-4000-8000-00000000000a", "00000000-0000-4000-8000-00000000000b"
ORGANISATION = """floors: {}
settings: {required-tags: {keys: [team, cost-center]}}
exceptions:
  - rule: aws-imdsv2-required
    stacks: [prod]
    level: advisory
    reason: "legacy agent needs IMDSv1 until it is replaced (OPS-42)"
    expires: 2999-01-01
"""


def aws(cluster: str, policy: str | None = None, extra: str = "") -> str:
    return ("config:\n  aws:region: us-east-1\n" + (f"  gpufleet:policy: {policy}\n" if policy else "") + extra
            + f"  gpufleet:cluster: {{extends: aws-train-p5{', ' + cluster if cluster else ''}}}\n")


def ali(cluster: str) -> str:
    return f"config:\n  alicloud:region: cn-beijing\n  gpufleet:cluster: {{extends: alicloud-infer-gn7i, {cluster}}}\n"


def azure(cluster: str, policy: str | None = None) -> str:
    return ("config:\n  azure-native:location: eastus\n" + (f"  gpufleet:policy: {policy}\n" if policy else "")
            + f"  gpufleet:cluster: {{extends: azure-infer-a100, {cluster}}}\n")


def storage(scratch: str = "/scratch", shared: str = "/data") -> str:
    return (f"storage: {{kms_key: create, root_volume_gb: 200, scratch: raid0, scratch_mount: {scratch}, "
            f"shared: {{kind: lustre, capacity_tib: 2.4, mount: {shared}}}}}")


AWS_NET = "network: {{cidr: 10.42.0.0/16, zones: [us-east-1a], admin_cidrs: {}}}"
ALI_NET = "network: {{cidr: 10.43.0.0/16, zones: [cn-beijing-h, cn-beijing-i], admin_cidrs: {}}}"
PROFILE = "identity: {instance_profile_arn: 'arn:aws:iam::111122223333:instance-profile/n', s3_read_prefixes: []}"

# name -> (stack file, exit code, words the refusal names)
CASES: dict[str, tuple[str, int, str]] = {
    # settings: a stack only tightens, whatever it writes
    "budget-raised": (aws("budget: {max_hourly_usd: 1}", "{hourly-budget: {maxHourlyUsd: 1.0e12}}"), 2,
                      "may only lower it"),
    "retention-below-default": (aws("", "{aws-log-retention: {minimumDays: 1}}"), 2, "below 30"),
    "all-disabled": (aws("", "{all: disabled}"), 2, "organisation floor"),
    "look-alike-rule": (aws("budget: {max_hourly_usd: 1}", '{"hourly\u2010budget": disabled}'), 2, "no such policy"),
    "derived-profile": (aws("", '{image-lock-valid: {profile: ""}}'), 2, "derived from the stack's spec"),
    "self-granted-key-account": (aws("", f"{{customer-key-account: {{allowedKeyAccounts: ['{OTHER}']}}}}"), 2,
                                 "only the organisation file grants more"),
    "self-allowed-service-tag": (azure("tags: {team: ml, cost-center: '1'}",
                                       "{azure-no-internet-admin-inbound: {allowedServiceTags: [AzureCloud]}}"), 2,
                                 "derived from the stack's spec"),
    # ranges: judged by what they cover, together
    "internet-halves": (ali(ALI_NET.format("[0.0.0.0/1, 128.0.0.0/1]")), 2, "public IPv4 addresses"),
    "two-offices": (aws(AWS_NET.format("[198.51.99.0/24, 203.0.112.0/24]")), 2, "512 public IPv4 addresses"),
    "ipv6-admin": (aws(AWS_NET.format("['::/0']")), 2, "network.admin_cidrs"),
    # keys: the stack's own, customer-managed, in its region and account
    "alibaba-service-key": (ali("storage: {kms_key: alias/acs/ecs, root_volume_gb: 100, scratch: none}"), 2,
                            "service"),
    "key-of-another-account": (aws(f"storage: {{kms_key: 'arn:aws:kms:us-east-1:{OTHER}:key/{KEY}'}}, {PROFILE}"),
                               2, f"account {OTHER}"),
    "key-beside-provider-account": (aws(f"storage: {{kms_key: 'arn:aws:kms:us-east-1:{OTHER}:key/{KEY}'}}",
                                        extra="  aws:allowedAccountIds: ['111122223333']\n"), 2, f"account {OTHER}"),
    "vault-of-another-subscription": (azure(
        "storage: {kms_key: 'https://kv1.vault.azure.net/keys/k/0123456789abcdef0123456789abcdef', "
        f"key_vault_id: '/subscriptions/{SUB_B}/resourceGroups/kv/providers/Microsoft.KeyVault/vaults/kv1'}}, "
        f"identity: {{identity_id: '/subscriptions/{SUB_A}/resourceGroups/i/providers/"
        "Microsoft.ManagedIdentity/userAssignedIdentities/nodes'}"), 2, "storage.key_vault_id"),
    "blank-key": (aws("storage: {kms_key: ' '}"), 2, "storage.kms_key"),
    # wildcards: no bucket by pattern
    "every-bucket": (aws("identity: {s3_read_prefixes: ['s3://*']}"), 2, "s3_read_prefixes"),
    "bucket-pattern": (aws("identity: {s3_write_prefixes: ['s3://ckpt-?/run']}"), 2, "pattern"),
    "every-oss-bucket": (ali("identity: {oss_read_prefixes: ['oss://*']}"), 2, "oss_read_prefixes"),
    # budget: the worst case, finite numbers
    "infinite-budget": (aws("budget: {max_hourly_usd: .inf}"), 2, "budget.max_hourly_usd"),
    "over-budget-at-max": (aws("node_groups: [{name: h100, instance_types: [p5.48xlarge], size: {min: 0, desired: 1, "
                               "max: 100}, capacity: on-demand, rdma: required}]"), 1, "hourly-budget"),
    # mounts: no system directory, however written
    "efa-libraries": (aws(storage(shared="/opt/amazon/efa")), 2, "/opt/amazon"),
    "shared-tmp": (aws(storage(shared="/tmp")), 2, "storage.shared.mount"),  # machine-path-ok: a node path
    "root-ssh": (aws(storage(scratch="/root/.ssh")), 2, "SSH keys"),  # machine-path-ok: a node path
    "cron-by-dots": (aws(storage(scratch="/data/../etc/cron.d")), 2, "/etc"),
    # side doors
    "cluster-and-images": (aws("", extra="  gpufleet:images: {name: i, cloud: aws, regions: [us-east-1], profile: "
                                         "cuda12.8-r580, kms_key: alias/aws/ebs}\n"), 2, "not both"),
    "extends-outside": ("config:\n  aws:region: us-east-1\n  gpufleet:cluster: {extends: x/../../outside}\n", 2,
                        "extends"),
    "region-split": ("config:\n  aws:region: us-west-2\n  gpufleet:cluster: {extends: aws-train-p5}\n", 2,
                     "aws:region"),
    # tags: a required tag says something
    "blank-cost-center": (aws("tags: {team: ml, cost-center: ' '}"), 1, "required-tags"),
    # fuzz: types as written
    "fractional-size": (aws("node_groups: [{name: h100, instance_types: [p5.48xlarge], size: {min: 0, desired: 1, "
                            "max: 16.5}, capacity: spot, on_demand_base: 1, rdma: required}]"), 2, "size.max"),
    "numeric-tag": (aws("tags: {team: ml, cost-center: 4411}"), 2, "tags"),
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The shipped stacks and each crafted file in one stacks directory, under an organisation file of its project
    that requires team and cost-center tags and grants the stack `prod` one exception."""
    from gpufleet import organisation_file
    from gpufleet.pack_config import floor as policy_floor

    root = tmp_path_factory.mktemp("project")
    shutil.copytree(REPO / "stacks", root / "stacks")
    (root / "policies").mkdir()
    (root / "policies" / "organisation.yaml").write_text(ORGANISATION)
    for name, (body, _, _) in CASES.items():
        (root / "stacks" / f"Pulumi.{name}.yaml").write_text(body)
    with pytest.MonkeyPatch.context() as patch:
        policy_floor.organisation.cache_clear()
        organisation_file.granted_key_accounts_in.cache_clear()
        patch.setattr(organisation_file, "ORGANISATION_FILE", root / "policies" / "organisation.yaml")
        yield root
    policy_floor.organisation.cache_clear()
    organisation_file.granted_key_accounts_in.cache_clear()


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_crafted_stack_is_refused(hostile: Path, name: str) -> None:
    _, code, words = CASES[name]
    result = CliRunner().invoke(app, ["plan", "--stack", name, "--stacks-dir", str(hostile / "stacks")])
    assert "Traceback" not in result.output, result.output
    assert result.exit_code == code, result.output
    assert words in " ".join(result.output.split()), result.output


def test_an_exception_named_for_prod_does_not_follow_a_copy_of_prod(hostile: Path) -> None:
    body = aws("", "{aws-imdsv2-required: advisory}")
    (hostile / "stacks" / "Pulumi.prod.yaml").write_text(body)
    own = CliRunner().invoke(app, ["plan", "--stack", "prod", "--stacks-dir", str(hostile / "stacks")])
    assert own.exit_code != 2, own.output  # the project's own prod: the exception holds
    elsewhere = hostile / "elsewhere"
    shutil.copytree(hostile / "stacks", elsewhere)
    copy = CliRunner().invoke(app, ["plan", "--stack-file", str(elsewhere / "Pulumi.prod.yaml")])
    assert copy.exit_code == 2 and "exceptions apply only to the project's own stack files" in " ".join(
        copy.output.split()), copy.output


def test_there_are_enough_crafted_files() -> None:
    assert len(CASES) >= 20
