"""Every spec rule: a stack that passes it and one that breaks it, with the message asserted."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from conftest import read_cluster

from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile import SpecInvalid
from gpufleet.stackfile.models import ClusterSpec


def validate_cluster(raw: dict[str, Any]) -> ClusterSpec:
    return resolve_cluster(raw).spec


def base() -> dict[str, Any]:
    return copy.deepcopy(read_cluster("aws-train-p5"))


def errors_of(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecInvalid) as caught:
        validate_cluster(raw)
    return [str(e) for e in caught.value.errors]


def group(raw: dict[str, Any], **changes: Any) -> dict[str, Any]:
    raw["node_groups"][0].update(changes)
    return raw


def test_shipped_stack_is_valid() -> None:
    spec = validate_cluster(base())
    assert spec.node_groups[0].instance_types == ["p5.48xlarge"]


def test_unknown_instance_type_names_field_and_catalog() -> None:
    errors = errors_of(group(base(), instance_types=["p5.48xlarge", "p9.huge"]))
    assert errors == [
        next(e for e in errors if e.startswith("node_groups[0].instance_types[1]: unknown instance type 'p9.huge'"))
    ]
    assert "gpufleet catalog --cloud aws" in errors[0]


def test_instance_type_of_another_cloud_is_unknown() -> None:
    errors = errors_of(group(base(), instance_types=["Standard_ND96isr_H100_v5"]))
    assert any("unknown instance type 'Standard_ND96isr_H100_v5' for aws" in e for e in errors)


@pytest.mark.parametrize("size", [{"min": 5, "desired": 2, "max": 1}, {"min": 0, "desired": 20, "max": 16}])
def test_size_out_of_order(size: dict[str, int]) -> None:
    errors = errors_of(group(base(), size=size))
    assert f"node_groups[0].size: needs min <= desired <= max, got min {size['min']}, desired {size['desired']}, " \
        f"max {size['max']}" in errors


def test_size_in_order_passes() -> None:
    assert validate_cluster(group(base(), size={"min": 2, "desired": 2, "max": 2})).node_groups[0].size.max == 2


def test_rdma_required_on_type_without_fabric() -> None:
    errors = errors_of(group(base(), instance_types=["g5.xlarge"]))
    assert any(e.startswith("node_groups[0].instance_types[0]: g5.xlarge has no RDMA fabric") for e in errors)


def test_rdma_auto_on_type_without_fabric_passes() -> None:
    spec = validate_cluster(group(base(), instance_types=["g5.xlarge"], rdma="auto", on_demand_base=0))
    assert spec.node_groups[0].rdma == "auto"


def test_rdma_group_over_two_zones() -> None:
    raw = base()
    raw["network"]["zones"] = ["us-east-1a", "us-east-1b"]
    errors = errors_of(raw)
    assert any(e.startswith("node_groups[0].zone: an RDMA group must sit in exactly one zone") for e in errors)


def test_rdma_group_pinned_to_one_of_two_zones_passes() -> None:
    raw = group(base(), zone="us-east-1b")
    raw["network"]["zones"] = ["us-east-1a", "us-east-1b"]
    assert validate_cluster(raw).node_groups[0].zone == "us-east-1b"


def test_zone_outside_network() -> None:
    errors = errors_of(group(base(), zone="us-east-1f"))
    assert "node_groups[0].zone: 'us-east-1f' is not in network.zones ['us-east-1a']" in errors


def test_fallback_with_other_fabric() -> None:
    errors = errors_of(group(base(), instance_types=["p5.48xlarge", "g5.xlarge"], rdma="auto"))
    assert any(e.startswith("node_groups[0].instance_types[1]: g5.xlarge has fabric none") for e in errors)


def test_fallback_with_other_interface_count_passes() -> None:
    spec = validate_cluster(group(base(), instance_types=["p5.48xlarge", "p5en.48xlarge"]))
    assert len(spec.node_groups[0].instance_types) == 2


@pytest.mark.parametrize("capacity", ["capacity-block", "reservation"])
def test_reservation_needs_id(capacity: str) -> None:
    errors = errors_of(group(base(), capacity=capacity, size={"min": 2, "desired": 2, "max": 2}, on_demand_base=0))
    assert any(e.startswith(f"node_groups[0].reservation_id: capacity {capacity} needs the reservation id")
               for e in errors)


def test_capacity_block_needs_fixed_size() -> None:
    errors = errors_of(group(base(), capacity="capacity-block", reservation_id="cr-0123456789abcdef0"))
    assert any(e.startswith("node_groups[0].size: a capacity block runs a fixed count") for e in errors)


def test_capacity_block_with_id_and_fixed_size_passes() -> None:
    raw = group(base(), capacity="capacity-block", reservation_id="cr-0123456789abcdef0",
                size={"min": 4, "desired": 4, "max": 4})
    assert validate_cluster(raw).node_groups[0].reservation_id == "cr-0123456789abcdef0"


def test_spot_max_price_above_on_demand() -> None:
    errors = errors_of(group(base(), spot_max_price=99.0))
    assert any(e.startswith("node_groups[0].spot_max_price: 99.0 USD/h is above the on-demand price of "
                            "p5.48xlarge in us-east-1 (55.04)") for e in errors)


def test_spot_max_price_below_on_demand_passes() -> None:
    assert validate_cluster(group(base(), spot_max_price=30.0)).node_groups[0].spot_max_price == 30.0


def test_mixed_needs_on_demand_base() -> None:
    errors = errors_of(group(base(), capacity="mixed", on_demand_base=0))
    assert any(e.startswith("node_groups[0].on_demand_base: mixed means on-demand nodes first") for e in errors)


def test_on_demand_base_above_max() -> None:
    errors = errors_of(group(base(), on_demand_base=17))
    assert "node_groups[0].on_demand_base: 17 on-demand nodes exceed size.max 16" in errors


def test_fleet_with_reservation_refused() -> None:
    raw = group(base(), provisioner="fleet", capacity="reservation", reservation_id="cr-0123456789abcdef0",
                on_demand_base=0)
    assert any(e.startswith("node_groups[0].provisioner: capacity reservation is targeted through a scaling group")
               for e in errors_of(raw))


@pytest.mark.parametrize("name", ["Train", "train_p5", "-train", "t", "x" * 40])
def test_invalid_names(name: str) -> None:
    raw = base()
    raw["name"] = name
    assert any(e.startswith("name: ") for e in errors_of(raw))


def test_names_valid_on_every_cloud_when_combined() -> None:
    raw = group(base(), name="g" * 30)
    raw["name"] = "c" * 30
    assert any("must stay within 47" in e for e in errors_of(raw))


def test_duplicate_group_names() -> None:
    raw = base()
    raw["node_groups"].append(copy.deepcopy(raw["node_groups"][0]))
    assert "node_groups[1].name: node group name 'h100' repeats; give each a new name" in errors_of(raw)


def test_unknown_image_profile() -> None:
    raw = base()
    raw["image"] = "cuda99-r1"
    errors = errors_of(raw)
    assert errors[0].startswith("image: unknown image profile 'cuda99-r1'; images/lock.yaml has: ")


def test_image_profile_without_region_image() -> None:
    raw = base()
    raw["region"] = "eu-north-1"
    errors = errors_of(raw)
    assert any(e.startswith("image: profile 'cuda12.8-r580' has no aws image in eu-north-1") for e in errors)


def test_unknown_field_is_named() -> None:
    raw = base()
    raw["storage"]["scratch_mnt"] = "/x"
    assert errors_of(raw) == ["storage.scratch_mnt: unknown field; check its spelling against `gpufleet schema`; "
                              "did you mean 'scratch_mount'?"]


def test_wrong_enum_value_is_named() -> None:
    errors = errors_of(group(base(), capacity="preemptible"))
    assert errors[0].startswith("node_groups[0].capacity: Input should be 'on-demand', 'spot'")


def test_network_needs_cidr_or_brought_ids() -> None:
    raw = base()
    del raw["network"]["cidr"]
    assert "network: set network.cidr to create a network, or bring one with vpc_id / subnet_ids" in errors_of(raw)


def test_brought_network_passes() -> None:
    raw = base()
    raw["network"] = {"vpc_id": "vpc-0123456789abcdef0", "subnet_ids": ["subnet-0abc"], "zones": ["us-east-1a"]}
    assert validate_cluster(raw).network.subnet_ids == ["subnet-0abc"]


def test_brought_subnets_match_zones() -> None:
    raw = base()
    raw["network"] = {
        "vpc_id": "vpc-0123456789abcdef0", "subnet_ids": ["subnet-0a", "subnet-0b"], "zones": ["us-east-1a"]
    }
    expected = "network.subnet_ids: list one per zone, in the order of network.zones (1 zones, 2 given)"
    assert expected in errors_of(raw)


def test_subnet_too_small() -> None:
    raw = group(base(), size={"min": 0, "desired": 2, "max": 512})
    raw["network"]["cidr"] = "10.0.0.0/22"
    errors = errors_of(raw)
    assert ("network.cidr: 10.0.0.0/22 is too small: the private subnet in us-east-1a (24-bit prefix, 251 usable "
            "addresses) cannot hold 512 node addresses at max size; use a /20 or larger, or lower size.max") in errors


def test_network_too_small_to_split() -> None:
    raw = base()
    raw["network"]["cidr"] = "10.0.0.0/26"
    assert "network.cidr: 10.0.0.0/26 is too small to split into private and public subnets; use a /22 or larger" \
        in errors_of(raw)


def test_subnet_large_enough_for_512_passes() -> None:
    raw = group(base(), size={"min": 0, "desired": 2, "max": 512})
    assert validate_cluster(raw).node_groups[0].size.max == 512


def test_tags_that_are_not_text_must_be_quoted() -> None:
    raw = base()
    raw["tags"] = {"cost-center": 4410}
    assert errors_of(raw) == ["tags: 'cost-center': 4410 is not text (YAML 1.2 read a int); quote it"]
    raw["tags"] = {"cost-center": "04410"}
    assert validate_cluster(raw).tags == {"cost-center": "04410"}


@pytest.mark.parametrize(("field", "value"), [("desired", True), ("max", "7"), ("min", 1.0)])
def test_sizes_are_integers_not_coerced(field: str, value: object) -> None:
    raw = base()
    raw["node_groups"][0]["size"][field] = value
    assert any(e.startswith(f"node_groups[0].size.{field}: Input should be a valid integer") for e in errors_of(raw))


def test_every_error_is_reported_at_once() -> None:
    raw = group(base(), size={"min": 5, "desired": 2, "max": 1}, instance_types=["p9.huge"])
    errors = errors_of(raw)
    assert any(e.startswith("node_groups[0].size") for e in errors)
    assert any(e.startswith("node_groups[0].instance_types[0]") for e in errors)


@pytest.mark.parametrize(("field", "value"), [("cidr", True), ("cidr", 167772160), ("admin_cidrs", [167772160])])
def test_cidrs_must_be_text(field: str, value: object) -> None:
    raw = base()
    raw["network"][field] = value
    assert any(e.startswith(f"network.{field}: ") and "is not a CIDR" in e for e in errors_of(raw))
