"""`gpufleet quote`: rows across clouds with node counts, costs from the catalog's price snapshots and their
sources, cheapest first, unpriced last; cloud caps on one fabric group; and a fork command that runs."""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path
from typing import Any

import boto3
import botocore.session
import jmespath
import pytest
from botocore import xform_name
from moto import mock_aws
from rich.console import Console
from typer.testing import CliRunner

from gpufleet import cli
from gpufleet.catalog import load_catalog
from gpufleet.cli import quote as quote_cli
from gpufleet.stackfile import load_stack

CATALOG = load_catalog()


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli.app, ["quote", *args])
    return result.exit_code, result.output


def quote_json(*args: str) -> dict[str, Any]:
    code, output = run(*args, "--format", "json")
    assert code == 0, output
    return json.loads(output)


def rows_of(data: dict[str, Any], cloud: str) -> list[dict[str, Any]]:
    return [row for row in data["rows"] if row["cloud"] == cloud]


def test_h100_x64_lists_aws_and_azure_rows_with_sources_and_node_counts() -> None:
    data = quote_json("--gpu", "H100", "--count", "64")
    aws, azure = rows_of(data, "aws"), rows_of(data, "azure")
    assert {(r["instance_type"], r["region"]) for r in aws} == {
        ("p5.48xlarge", "us-east-1"), ("p5.48xlarge", "us-west-2")}
    assert {(r["instance_type"], r["region"]) for r in azure} == {("Standard_ND96isr_H100_v5", "eastus")}
    for row in aws + azure:
        per_node = CATALOG.get(row["cloud"], row["instance_type"]).gpu.count
        assert (row["gpus_per_node"], row["nodes"], row["gpus"]) == (per_node, math.ceil(64 / per_node), 64)
        price = CATALOG.get(row["cloud"], row["instance_type"]).price(row["region"])
        assert row["on_demand_usd"] == round(row["nodes"] * price.on_demand, 4)
        assert row["price_source"] == price.source and "skypilot-catalog" in row["price_source"]
        assert row["price_date"] == price.date
    # The ND H100 size is absent from southcentralus in the snapshot: said so, not a row.
    assert any(pair.startswith("Standard_ND96isr_H100_v5 in southcentralus") for pair in data["not_offered"])
    # "H100 NVL" is another model: --gpu matches the model, not a prefix.
    assert all(row["gpu_model"] == "H100" for row in data["rows"])


@pytest.fixture
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables at a width where cells do not wrap (CliRunner's terminal is 80 columns)."""
    monkeypatch.setattr(quote_cli, "out", Console(width=300, highlight=False))


def test_table_shows_the_rows_and_the_expected_rule(wide: None) -> None:
    code, output = run("--gpu", "h100", "--count", "64")
    assert code == 0, output
    assert "p5.48xlarge" in output and "Standard_ND96isr_H100_v5" in output and "8 x 8" in output
    assert "expected = on-demand" in output and "not offered: Standard_ND96isr_H100_v5 in southcentralus" in output


def test_rows_are_sorted_by_cost_with_unpriced_rows_last_and_labelled(wide: None) -> None:
    data = quote_json("--gpu", "H200", "--count", "16")
    costs = [row["expected_usd"] for row in data["rows"]]
    priced = [cost for cost in costs if cost is not None]
    assert priced == sorted(priced) and priced, costs
    assert costs[len(priced):] == [None] * (len(costs) - len(priced)) and len(priced) < len(costs)
    for row in data["rows"][len(priced):]:
        assert row["priced"] is False and any(note.startswith("unpriced") for note in row["notes"])
    code, output = run("--gpu", "H200", "--count", "16")
    assert code == 0 and "unpriced" in output


def test_spot_capacity_prices_nodes_at_spot_where_published() -> None:
    data = quote_json("--gpu", "H100", "--count", "64", "--capacity", "spot", "--cloud", "aws")
    assert data["capacity"] == "spot" and "spot price" in data["expected"]
    for row in data["rows"]:
        price = CATALOG.get("aws", row["instance_type"]).price(row["region"])
        if price.spot is not None:
            assert row["expected_usd"] == round(row["nodes"] * price.spot, 4) < row["on_demand_usd"]
        else:
            assert row["expected_usd"] == row["on_demand_usd"]
            assert "no spot price published: expected at the on-demand price" in row["notes"]
    assert any(CATALOG.get("aws", r["instance_type"]).price(r["region"]).spot is not None for r in data["rows"])


def test_on_demand_capacity_expects_on_demand() -> None:
    for row in quote_json("--gpu", "A100", "--count", "8")["rows"]:
        assert row["expected_usd"] == row["on_demand_usd"]


def test_rows_over_a_clouds_fabric_group_cap_say_so() -> None:
    # 1000 A100s on 8-GPU ND sizes is 125 VMs; one InfiniBand scale set holds 100 (catalog limit).
    most = CATALOG.limit("azure", "ib_scale_set_max_vms")
    ib = [r for r in quote_json("--gpu", "A100", "--count", "1000", "--cloud", "azure")["rows"]
          if r["fabric"] == "infiniband"]
    assert ib and all(r["nodes"] > most and r["one_fabric_group"] is False for r in ib)
    assert all(f"cannot be one InfiniBand scale set: {r['nodes']} nodes, at most {most}" in r["notes"] for r in ib)
    small = quote_json("--gpu", "A100", "--count", "64", "--cloud", "azure")["rows"]
    assert all(r["one_fabric_group"] is True for r in small if r["fabric"] == "infiniband")
    # Alibaba types without ERIs group in a LowLatency deployment set: 20 at most, never spot.
    ali = quote_json("--gpu", "A100", "--count", "8", "--cloud", "alicloud", "--capacity", "spot")["rows"]
    assert ali and all(r["one_fabric_group"] is False and "a LowLatency deployment set cannot hold spot nodes"
                       in r["notes"] for r in ali)
    assert all(not r["priced"] for r in ali)  # no citable Alibaba USD price


def test_unknown_gpu_exits_2_listing_the_known_models() -> None:
    code, output = run("--gpu", "Z999", "--count", "8")
    assert code == 2 and "--gpu: no catalog type has GPU model 'Z999'" in output
    assert "H100" in output and "A100" in output and "Traceback" not in output


def test_bad_options_exit_2_naming_the_option() -> None:
    assert run("--gpu", "H100", "--count", "0")[0] == 2
    code, output = run("--gpu", "H100", "--count", "8", "--region", "mars-1")
    assert code == 2 and "--region: 'mars-1'" in output
    code, output = run("--gpu", "H100", "--count", "8", "--pick", "2")
    assert code == 2 and "--pick" in output
    code, output = run("--gpu", "H100", "--count", "8", "--fork", "x", "--pick", "99")
    assert code == 2 and "--pick: must be a row number" in output


def _zone_name(lookup: str) -> tuple[str, str]:
    """Run the fork's zone lookup as the AWS CLI would, against moto's account: its operation and parameters read
    off botocore's EC2 model (the CLI's own), its --query applied to the answer. The zone's name and region."""
    argv = shlex.split(lookup)
    assert argv[:2] == ["aws", "ec2"]
    model = botocore.session.get_session().get_service_model("ec2")
    [operation] = [name for name in model.operation_names if xform_name(name, "-") == argv[2]]
    options = dict(zip(argv[3::2], argv[4::2], strict=True))
    members = model.operation_model(operation).input_shape.members
    params = {name: [options[f"--{xform_name(name, '-')}"]] for name in members
              if f"--{xform_name(name, '-')}" in options}
    assert set(params) == {"ZoneIds"} and options["--output"] == "text"
    with mock_aws():
        answer = boto3.client("ec2", region_name=options["--region"]).describe_availability_zones(**params)
    return jmespath.search(options["--query"], answer), options["--region"]


def fork_and_check(stacks_dir: Path, *quote_args: str) -> dict[str, Any]:
    """Quote, then run the printed fork as a shell would: a zone lookup first (answered by moto's account, see
    _zone_name), its name where the fork reads "$zone"."""
    data = quote_json(*quote_args, "--stacks-dir", str(stacks_dir))
    command = data["fork"]["command"]
    if data["fork"]["zone_lookup"] is not None:
        lookup, _, command = command.partition(" && ")
        assert lookup == f"zone=$({data['fork']['zone_lookup']})"
        command = command.replace("$zone", _zone_name(data["fork"]["zone_lookup"])[0])
    argv = shlex.split(command)
    assert argv[:2] == ["gpufleet", "fork"]
    result = CliRunner().invoke(cli.app, [*argv[1:], "--stacks-dir", str(stacks_dir)])
    assert result.exit_code == 0, result.output  # fork validates and plans the new stack before writing it
    return data


def test_fork_prints_a_runnable_fork_into_another_region(stacks_dir: Path) -> None:
    data = fork_and_check(stacks_dir, "--gpu", "H100", "--count", "64", "--region", "us-west-2",
                          "--fork", "h100-west", "--capacity", "spot")
    row = data["rows"][0]
    assert data["fork"]["template"] == "aws-train-p5" and data["fork"]["row"] == 1
    config = load_stack(stacks_dir / "Pulumi.h100-west.yaml")
    cluster = config["gpufleet:cluster"]
    assert config["aws:region"] == cluster["region"] == "us-west-2"
    group = cluster["node_groups"][0]
    assert group["instance_types"] == [row["instance_type"]] and group["size"]["max"] == row["nodes"] == 8
    assert group["capacity"] == "spot" and group["on_demand_base"] == 0
    assert cluster["budget"]["max_hourly_usd"] == math.ceil(row["on_demand_usd"])


def test_fork_of_a_picked_azure_row(stacks_dir: Path) -> None:
    data = fork_and_check(stacks_dir, "--gpu", "A100", "--count", "16", "--cloud", "azure", "--fork",
                          "a100-train", "--pick", "1")
    row = data["rows"][0]
    config = load_stack(stacks_dir / "Pulumi.a100-train.yaml")["gpufleet:cluster"]
    assert config["node_groups"][0]["instance_types"] == [row["instance_type"]]
    assert config["region"] == row["region"]
    # An IB type forks the training template; a type without InfiniBand the serving one.
    expected = "azure-train-ndh100" if row["fabric"] == "infiniband" else "azure-infer-a100"
    assert data["fork"]["template"] == expected


def test_fork_of_an_unpriced_row_drops_the_budget_and_says_why(stacks_dir: Path) -> None:
    data = quote_json("--gpu", "H200", "--count", "16", "--cloud", "azure", "--fork", "h200", "--stacks-dir",
                      str(stacks_dir))
    assert "budget.max_hourly_usd=null" in data["fork"]["settings"]
    assert any("no catalog price" in note for note in data["fork"]["notes"])
    fork_and_check(stacks_dir, "--gpu", "H200", "--count", "16", "--cloud", "azure", "--fork", "h200b")


def test_fork_zones_follow_the_region(stacks_dir: Path) -> None:
    # Azure zone names ("1", "2") do not name the region: the template's stay, with no note.
    data = fork_and_check(stacks_dir, "--gpu", "A100", "--count", "4", "--cloud", "azure", "--region",
                          "southcentralus", "--capacity", "spot", "--fork", "a100-south")
    assert data["fork"]["notes"] == [] and not any(s.startswith("network.zones") for s in data["fork"]["settings"])
    # Alibaba: the zones a shipped stack uses in the row's region.
    data = fork_and_check(stacks_dir, "--gpu", "H20", "--count", "16", "--region", "cn-beijing", "--fork", "h20")
    zones = load_stack(stacks_dir / "Pulumi.h20.yaml")["gpufleet:cluster"]["network"]["zones"]
    assert zones == load_stack(stacks_dir / "Pulumi.alicloud-infer-gn7i.yaml")["gpufleet:cluster"]["network"][
        "zones"][:1]


def test_fork_into_a_region_without_the_profiles_image_says_so() -> None:
    data = quote_json("--gpu", "H100", "--count", "16", "--region", "us-east-2", "--fork", "h100-ohio")
    (note,) = [n for n in data["fork"]["notes"] if "image" in n]
    assert note.startswith("image profile 'cuda12.8-r580' has no aws image in us-east-2, so this fork is refused")
    assert "add us-east-2 to the image stack's regions" in note
    assert not [n for n in quote_json("--gpu", "H100", "--count", "16", "--region", "us-west-2", "--fork",
                                      "h100-west")["fork"]["notes"] if "image" in n]


def test_a_spot_fork_lands_in_the_zone_its_price_is_of_by_id(stacks_dir: Path) -> None:
    data = fork_and_check(stacks_dir, "--gpu", "H100", "--count", "64", "--capacity", "spot", "--cloud", "aws",
                          "--region", "us-west-2", "--fork", "h100-spot")
    row, fork = data["rows"][0], data["fork"]
    price = CATALOG.get("aws", row["instance_type"]).price(row["region"])
    assert row["zone_id"] == price.spot_zone_id == "usw2-az1"
    name, region = _zone_name(fork["zone_lookup"])
    assert region == row["region"]
    cluster = load_stack(stacks_dir / "Pulumi.h100-spot.yaml")["gpufleet:cluster"]
    assert cluster["network"]["zones"] == [name]
    with mock_aws():
        [zone] = boto3.client("ec2", region_name=region).describe_availability_zones(ZoneNames=[name])[
            "AvailabilityZones"]
    assert zone["ZoneId"] == row["zone_id"] and name != f"{region}a"  # here the priced zone is not the `a` zone
    assert any(note.startswith("the spot price is of zone usw2-az1") for note in fork["notes"])
    code, table = run("--gpu", "H100", "--count", "64", "--capacity", "spot", "--cloud", "aws", "--region",
                      "us-west-2", "--fork", "h100-spot2", "--stacks-dir", str(stacks_dir))
    assert code == 0 and "usw2-az1" in table.split("fork of row")[0] and "zone usw2-az1):" in table


def test_regional_prices_fork_without_a_zone_lookup() -> None:
    # On demand, and Azure spot, are priced per region: no zone to hold, so no lookup.
    for args in (["--cloud", "aws"], ["--cloud", "azure", "--capacity", "spot"]):
        data = quote_json("--gpu", "H100", "--count", "16", *args, "--fork", "h100")
        assert data["fork"]["zone_lookup"] is None and not any(row["zone_id"] for row in data["rows"])
        assert " && " not in data["fork"]["command"]
