"""Integrity of the instance catalog data: completeness, sources, prices, and the fabric facts code uses."""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path

import pydantic
import pytest

from gpufleet.catalog import CLOUDS, InstanceType, load_catalog
from gpufleet.lock import load_lock
from gpufleet.stackfile import SpecInvalid

CATALOG = load_catalog()
ALL_ROWS = CATALOG.instances()
ROW_IDS = [f"{row.cloud}:{row.name}" for row in ALL_ROWS]

# Every GPU instance type the reference notes list that the data keeps (ebmgn7ex is dropped: see README).
EXPECTED = {
    "aws": {
        "p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge",
        "g6e.48xlarge", "g6e.24xlarge", "g5.48xlarge", "g5.12xlarge", "g5.xlarge", "g6.48xlarge",
        "g6.12xlarge", "g6.xlarge",
    },
    "azure": {
        "Standard_ND96asr_v4", "Standard_ND96amsr_A100_v4", "Standard_ND96isr_H100_v5",
        "Standard_ND96isr_H200_v5", "Standard_NC24ads_A100_v4", "Standard_NC48ads_A100_v4",
        "Standard_NC96ads_A100_v4", "Standard_NC40ads_H100_v5",
    },
    "alicloud": {
        "ecs.gn7-c13g1.26xlarge", "ecs.gn7e-c16g1.32xlarge",
        "ecs.gn8is-8x.32xlarge", "ecs.ebmgn8v.48xlarge", "ecs.ebmgn7e.32xlarge", "ecs.sccgn7ex.32xlarge",
        "ecs.gn7i-c8g1.2xlarge", "ecs.gn7i-c32g1.32xlarge",
    },
}
FABRIC_KINDS = {
    "aws": {"efa", "none"}, "azure": {"infiniband", "none"}, "alicloud": {"erdma", "roce", "none"},
}
NVSWITCH_TYPES = [
    ("aws", "p4d.24xlarge"), ("aws", "p4de.24xlarge"), ("aws", "p5.48xlarge"), ("aws", "p5e.48xlarge"),
    ("aws", "p5en.48xlarge"), ("azure", "Standard_ND96asr_v4"),
    ("azure", "Standard_ND96amsr_A100_v4"), ("azure", "Standard_ND96isr_H100_v5"),
    ("azure", "Standard_ND96isr_H200_v5"), ("alicloud", "ecs.ebmgn8v.48xlarge"), ("alicloud", "ecs.sccgn7ex.32xlarge"),
    ("alicloud", "ecs.ebmgn7e.32xlarge"),  # bare-metal HGX A100 (issue 38: was listed without NVSwitch)
]
# Placeholders the schema forces (non-nullable) that a row may still declare unconfirmed.
FORCED_PLACEHOLDERS = {"fabric.interfaces", "nvswitch"}


def _nullable_paths(model: type[pydantic.BaseModel], prefix: str = "") -> set[str]:
    """Dotted paths of every field that may be None, found from the schema so new fields are covered."""
    paths: set[str] = set()
    for name, field in model.model_fields.items():
        # Recurse into models and optional models, not into containers such as prices: dict[str, Price].
        origin = typing.get_origin(field.annotation)
        args = typing.get_args(field.annotation) if origin in (typing.Union, types.UnionType) else ()
        args = args or (field.annotation,)
        if type(None) in args:
            paths.add(prefix + name)
        for sub in args:
            if isinstance(sub, type) and issubclass(sub, pydantic.BaseModel):
                paths |= _nullable_paths(sub, f"{prefix}{name}.")
    return paths


NULLABLE = _nullable_paths(InstanceType)


def _value(row: InstanceType, path: str) -> object:
    node: object = row
    for part in path.split("."):
        if node is None:
            return None
        node = getattr(node, part)
    return node


def _required_paths(row: InstanceType) -> set[str]:
    """Nullable facts that apply to this row: fabric bandwidth needs a fabric, device size needs devices."""
    required = set(NULLABLE)
    if row.fabric.kind == "none":
        required.discard("fabric.gbps")
    if row.local_nvme is None or row.local_nvme.count == 0:
        required.discard("local_nvme.size_gb")
    if row.cloud != "alicloud":
        required.discard("boot_modes")  # only Alibaba's images are chosen by boot mode
    return required


def test_schema_walk_finds_the_nullable_facts():
    assert {"gpu.memory_gb", "vcpu", "memory_gib", "fabric.gbps", "network_gbps", "local_nvme",
            "local_nvme.size_gb"} <= NULLABLE


def test_every_cloud_has_its_data_file():
    assert [c for c in CLOUDS if not CATALOG.names(c)] == []


@pytest.mark.parametrize("cloud", sorted(EXPECTED))
def test_every_fact_sheet_instance_is_in_the_data(cloud):
    assert set(CATALOG.names(cloud)) == EXPECTED[cloud]


def test_unconfirmed_identity_row_is_dropped():
    assert CATALOG.get("alicloud", "ecs.ebmgn7ex.32xlarge") is None


@pytest.mark.parametrize("row", ALL_ROWS, ids=ROW_IDS)
def test_every_fact_is_set_or_declared_unconfirmed(row):
    missing = sorted(p for p in _required_paths(row) if _value(row, p) is None and p not in row.unconfirmed)
    assert missing == [], f"{row.cloud}:{row.name} leaves {missing} null without a reason in unconfirmed"


def _unpriced_paths(row: InstanceType) -> set[str]:
    """`prices.<region>.on_demand` of each region the row is offered in without an on-demand price."""
    return {f"prices.{region}.on_demand" for region, price in row.prices.items()
            if price.offered and price.on_demand is None}


@pytest.mark.parametrize("row", ALL_ROWS, ids=ROW_IDS)
def test_unconfirmed_names_only_facts_that_are_really_missing(row):
    for path, reason in row.unconfirmed.items():
        assert path in NULLABLE | FORCED_PLACEHOLDERS | _unpriced_paths(row), f"unknown or set fact {path!r}"
        assert len(reason) > 10, f"{path}: give the reason"
        if path in NULLABLE:
            assert _value(row, path) is None, f"{path} is set yet declared unconfirmed"


@pytest.mark.parametrize("row", ALL_ROWS, ids=ROW_IDS)
def test_an_offered_region_without_an_on_demand_price_says_why(row):
    assert sorted(_unpriced_paths(row) - set(row.unconfirmed)) == []


LOCK = load_lock()
LOCK_PAIRS = [(row, region) for row in ALL_ROWS if row.cloud in ("aws", "azure") for region in LOCK.regions(row.cloud)]


@pytest.mark.parametrize("row, region", LOCK_PAIRS, ids=[f"{r.cloud}:{r.name}@{g}" for r, g in LOCK_PAIRS])
def test_every_type_is_priced_or_listed_as_not_offered_in_every_lock_region(row, region):
    """A budget in any region the image lock covers can be checked, or the catalog says why it cannot."""
    price = row.price(region)
    assert price is not None, f"{row.cloud}:{row.name} has no price entry for {region}"
    if price.offered:
        assert price.on_demand is not None or f"prices.{region}.on_demand" in row.unconfirmed, (row.name, region)
    assert price.source.startswith("skypilot-catalog") and "@" in price.source, "name the file and its commit"


def test_the_lock_regions_include_the_required_ones():
    assert {"us-east-1", "us-west-2"} <= set(LOCK.regions("aws"))
    assert {"eastus", "southcentralus"} <= set(LOCK.regions("azure"))


@pytest.mark.parametrize("row", ALL_ROWS, ids=ROW_IDS)
def test_fabric_kind_belongs_to_the_cloud(row):
    assert row.fabric.kind in FABRIC_KINDS[row.cloud]
    if row.fabric.kind == "none":
        assert (row.fabric.interfaces, row.fabric.gbps) == (0, None)


@pytest.mark.parametrize("row", ALL_ROWS, ids=ROW_IDS)
def test_every_row_names_its_source(row):
    assert row.source.strip()


@pytest.mark.parametrize("row", ALL_ROWS, ids=ROW_IDS)
def test_prices_have_source_and_date_and_are_sane(row):
    for region, price in row.prices.items():
        assert price.source.strip(), region
        assert re.fullmatch(r"20\d\d-(0[1-9]|1[0-2])(-\d\d)?", price.date), (region, price.date)
        for value in (price.on_demand, price.spot):
            assert value is None or value >= 0, (region, value)
        if price.on_demand is not None and price.spot is not None:
            assert price.spot <= price.on_demand, region


def test_required_regions_have_an_on_demand_price():
    for cloud, name, region in [
        ("aws", "p5.48xlarge", "us-east-1"), ("aws", "p4d.24xlarge", "us-east-1"),
        ("aws", "g6e.48xlarge", "us-east-1"), ("azure", "Standard_ND96isr_H100_v5", "eastus"),
        ("azure", "Standard_ND96asr_v4", "eastus"),
    ]:
        price = CATALOG.get(cloud, name).price(region)
        assert price is not None and price.on_demand, (cloud, name, region)


def test_known_source_errors_are_not_copied():
    h100 = CATALOG.get("azure", "Standard_ND96isr_H100_v5")
    assert h100.gpu.count == 8
    assert all(p.spot is None or p.spot < p.on_demand for p in h100.prices.values())
    p5e = CATALOG.get("aws", "p5e.48xlarge")
    assert all(p.on_demand is None for p in p5e.prices.values())


def test_p4d_spot_names_its_availability_zone():
    assert "use1-az1" in CATALOG.get("aws", "p4d.24xlarge").price("us-east-1").source


@pytest.mark.parametrize("cloud, name, kind, interfaces", [
    ("aws", "p4d.24xlarge", "efa", 4), ("aws", "p5.48xlarge", "efa", 32),
    ("aws", "p5en.48xlarge", "efa", 16),
    ("aws", "g6e.48xlarge", "efa", 4), ("aws", "g6e.24xlarge", "efa", 2),
    ("azure", "Standard_ND96isr_H100_v5", "infiniband", 8), ("azure", "Standard_ND96asr_v4", "infiniband", 8),
])
def test_fabric_interfaces(cloud, name, kind, interfaces):
    fabric = CATALOG.get(cloud, name).fabric
    assert (fabric.kind, fabric.interfaces) == (kind, interfaces)


@pytest.mark.parametrize("name", sorted(n for n in EXPECTED["aws"] if n.startswith(("g5.", "g6."))))
def test_g5_g6_efa_follows_size(name):
    size = name.split(".")[1]
    expected = 0 if size in {"xlarge", "2xlarge", "4xlarge"} else 1
    assert CATALOG.get("aws", name).fabric.interfaces == expected


@pytest.mark.parametrize("cloud, name", NVSWITCH_TYPES)
def test_nvswitch_types_need_fabric_manager(cloud, name):
    assert CATALOG.get(cloud, name).nvswitch is True


GOOD_ROW = """
cloud: aws
instances:
  test-type:
    gpu: {model: H100, architecture: hopper, count: 8}
    fabric: {kind: efa, interfaces: 4}
    nvswitch: true
    source: "unit test"
"""


def _write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "aws.yaml").write_text(text)
    return tmp_path


def test_a_well_formed_file_loads_from_another_directory(tmp_path):
    catalog = load_catalog.__wrapped__(_write(tmp_path, GOOD_ROW))
    assert catalog.get("aws", "test-type").fabric.interfaces == 4


@pytest.mark.parametrize("change, field", [
    (("count: 8", "count: 0"), ("instances", "test-type", "gpu", "count")),
    (("kind: efa", "kind: omnipath"), ("instances", "test-type", "fabric", "kind")),
    (("nvswitch: true", "nvswtich: true"), ("instances", "test-type", "nvswtich")),
    (('source: "unit test"', ""), ("instances", "test-type", "source")),
])
def test_a_malformed_file_names_the_field(tmp_path, change, field):
    with pytest.raises(SpecInvalid) as raised:
        load_catalog.__wrapped__(_write(tmp_path, GOOD_ROW.replace(*change)))
    assert ".".join(field) in [error.path for error in raised.value.errors]
    assert str(raised.value).startswith(f"invalid {tmp_path / 'aws.yaml'}:")


def test_a_price_without_a_date_is_rejected(tmp_path):
    text = GOOD_ROW + '    prices:\n      us-east-1: {on_demand: 1.0, source: "unit test"}\n'
    with pytest.raises(SpecInvalid) as raised:
        load_catalog.__wrapped__(_write(tmp_path, text))
    assert "instances.test-type.prices.us-east-1.date" in [error.path for error in raised.value.errors]


def test_a_region_not_offered_takes_no_price(tmp_path):
    text = GOOD_ROW + (
        '    prices:\n      us-east-1: {offered: false, on_demand: 0.0, source: "unit test", date: "2026-11"}\n')
    with pytest.raises(SpecInvalid) as raised:
        load_catalog.__wrapped__(_write(tmp_path, text))
    assert "offered: false takes no on_demand or spot price" in str(raised.value)


@pytest.mark.parametrize("row", CATALOG.instances("aws"), ids=[r.name for r in CATALOG.instances("aws")])
def test_an_aws_spot_price_names_the_az_id_it_was_read_in(row):
    # AWS publishes spot per zone: the quote and its fork need the zone a figure is of, by its account-independent ID.
    for region, price in row.prices.items():
        if price.spot is not None:
            assert price.spot_zone_id is not None and f"AZ {price.spot_zone_id}" in price.source, region


def test_a_zone_id_without_a_spot_price_is_rejected(tmp_path):
    from gpufleet.catalog.model import Price

    with pytest.raises(pydantic.ValidationError, match="spot_zone_id names the zone of a spot price"):
        Price(on_demand=1.0, spot=None, spot_zone_id="use1-az1", source="test", date="2026-11")
