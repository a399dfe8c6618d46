"""A Slurm cluster's head node is priced like a system group: one on-demand machine at the catalog's system-type price
for the region, unpriced (and the cluster's total with it) where the catalog has none, the stack's own price where it
gives one; the budget rule's config counts it."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from conftest import read_cluster, write_stack
from slurm_stacks import slurm_cluster
from typer.testing import CliRunner

from gpufleet.catalog import load_catalog
from gpufleet.cli import app
from gpufleet.pack_config.derive import derived_settings
from gpufleet.plan.cost import summarize
from gpufleet.resolve import resolve_cluster

HEAD_ROW = {"name": "slurm-head", "role": "slurm-head", "instance_type": "m7i.xlarge", "fabric": "none",
            "interfaces": 0, "capacity": "on-demand", "size": {"min": 1, "desired": 1, "max": 1}}


def test_the_head_node_adds_its_catalog_price() -> None:
    without = summarize(resolve_cluster(copy.deepcopy(read_cluster("aws-train-p5"))))
    summary = summarize(resolve_cluster(slurm_cluster("aws-train-p5")))
    price = load_catalog().system_type("aws", "m7i.xlarge")[1].price("us-east-1").on_demand
    assert summary.node_groups[-1] == HEAD_ROW
    for key, total in summary.hourly_usd.items():
        assert total == pytest.approx(without.hourly_usd[key] + price)


def test_a_head_node_without_a_type_is_priced_as_the_clouds_default_cpu_type() -> None:
    raw = slurm_cluster("aws-train-p5")
    del raw["scheduler"]["head_node"]
    default, row = load_catalog().system_type("aws", None)
    summary = summarize(resolve_cluster(raw))
    assert summary.node_groups[-1]["instance_type"] == default
    assert summary.unpriced == [] and row.price("us-east-1") is not None


def test_a_head_node_type_without_a_catalog_price_leaves_the_cluster_unpriced() -> None:
    summary = summarize(resolve_cluster(slurm_cluster("azure-train-ndh100")))
    region = read_cluster("azure-train-ndh100")["region"]
    assert summary.unpriced == [f"Standard_D4ds_v5 in {region} (Slurm head node)"]
    assert set(summary.hourly_usd.values()) == {None}


def test_the_stacks_own_price_prices_it() -> None:
    raw = slurm_cluster("azure-train-ndh100")
    raw["prices"] = {"Standard_D4ds_v5": {"on_demand": 0.25, "spot": None, "source": "our agreement 2026-11"}}
    summary = summarize(resolve_cluster(raw))
    assert summary.unpriced == []
    assert summary.stack_priced[-1].startswith("slurm-head: Standard_D4ds_v5 priced by the stack at 0.25 USD/h "
                                               "(our agreement 2026-11); no catalog price in ")


def test_the_budget_rule_counts_the_head_node() -> None:
    groups = derived_settings(resolve_cluster(slurm_cluster("aws-train-p5")))["hourly-budget"]["nodeGroups"]
    assert groups[-1] == {"name": "slurm head node", "cloud": "aws", "instanceTypes": ["m7i.xlarge"], "maxSize": 1}


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_the_plans_node_groups_name_the_head_node(tmp_path: Path, fmt: str) -> None:
    write_stack(tmp_path, "slurm-p5", slurm_cluster("aws-train-p5"))
    result = CliRunner().invoke(app, ["plan", "--stack", "slurm-p5", "--stacks-dir", str(tmp_path), "--format", fmt],
                                env={"COLUMNS": "160"})
    rows = [line.replace("│", "|").split("|") for line in result.stdout.splitlines()]
    cells = [[cell.strip() for cell in row if cell.strip()] for row in rows]
    assert ["slurm-head", "m7i.xlarge", "on-demand", "1/1/1", "none", "0"] in cells, result.stdout
