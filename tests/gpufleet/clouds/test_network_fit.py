"""A network too small for its nodes is named with the prefix that fits, the same way on every cloud: the advice
is always a wider network than the one given, a network of that prefix passes, and one bit longer does not."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from conftest import read_cluster
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile import SpecInvalid

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# One shipped stack per cloud whose first group can grow (no capacity-block or scale-set cap below 1,000 nodes).
STACKS = ("aws-infer-g6e", "alicloud-train-ebmgn8v", "azure-infer-a100")
ADVICE = re.compile(r"use a /(\d+) or larger")


def size_errors(stack: str, prefix: int, size_max: int) -> list[str]:
    raw = copy.deepcopy(read_cluster(stack))
    raw["network"]["cidr"] = f"10.0.0.0/{prefix}"
    raw["node_groups"][0]["size"] = {"min": 0, "desired": 0, "max": size_max}
    try:
        resolve_cluster(raw)
    except SpecInvalid as caught:
        return [str(e) for e in caught.errors if str(e).startswith("network.cidr") and "networks take a" not in str(e)]
    return []


def advised(errors: list[str]) -> set[int]:
    return {int(found) for e in errors for found in ADVICE.findall(e)}


@SETTINGS
@given(st.sampled_from(STACKS), st.integers(16, 28), st.integers(1, 600))
@example("aws-infer-g6e", 24, 300)  # over what the /22 a split needs holds
@example("alicloud-train-ebmgn8v", 24, 100)
@example("azure-infer-a100", 25, 200)
def test_the_advised_prefix_is_wider_and_fits_exactly(stack: str, prefix: int, size_max: int) -> None:
    errors = size_errors(stack, prefix, size_max)
    if not errors:
        return
    (fits,) = advised(errors) or {None}
    assert fits is not None, errors
    assert fits < prefix, f"advised /{fits} for a /{prefix} that is too small: {errors}"
    assert size_errors(stack, fits, size_max) == [], f"/{fits} was advised but does not fit"
    assert size_errors(stack, fits + 1, size_max), f"/{fits + 1} fits too: the advice is not the smallest network"


@pytest.mark.parametrize("stack", STACKS)
def test_the_message_names_the_given_network_and_the_fit(stack: str) -> None:
    (error,) = size_errors(stack, 26, 200)
    assert error.startswith("network.cidr: 10.0.0.0/26 is too small"), error
    assert advised([error]) and min(advised([error])) < 26


def test_alibaba_too_many_zones_is_not_called_a_small_network() -> None:
    raw: dict[str, Any] = copy.deepcopy(read_cluster("alicloud-infer-gn7i"))
    raw["network"]["cidr"] = "10.43.0.0/16"
    raw["network"]["zones"] = [f"cn-beijing-{z}" for z in "abcdefg"[:5]]
    with pytest.raises(SpecInvalid) as caught:
        resolve_cluster(raw)
    text = [str(e) for e in caught.value.errors]
    assert not [e for e in text if "too small" in e], text
    assert any(e.startswith("network.zones: 5 zones") and "at most 4" in e for e in text), text
