"""The images an Alibaba image pipeline execution made, read through the official ECS SDK client (its own factory)
from recorded answers at the HTTP layer (tests/alicloud_replay.py): the build region's image is the one the execution
names, a copy the one own image of exactly its name; an unfinished execution names none."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import responses
from alicloud_replay import FAST, FIXTURES, Replay, static_key

from gpufleet.sources.alicloud import default_ecs_client
from gpufleet.sources.alicloud_execution import execution_images

SOURCES = Path(__file__).parent.parent / "data" / "sources" / "alicloud"
EXECUTION = "exec-0jl7kp9a3i5ilu6xbm2s"
BUILD, COPY = "cn-wulanchabu", "cn-beijing"
NAME = "gpufleet-cuda12.8-r580-uefi_20261001T100000"


@pytest.fixture
def replay() -> Iterator[Replay]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        answers = Replay(mock, SOURCES, FIXTURES)
        yield answers
        assert not answers.unexpected, answers.unexpected


def client(region: str) -> object:
    return default_ecs_client(region, credential=static_key(), retry=FAST)


def test_the_execution_names_its_image_and_its_copy_is_found_by_exact_name(replay: Replay) -> None:
    replay.answer("DescribeImagePipelineExecutions", "DescribeImagePipelineExecutions.success", RegionId=BUILD,
                  ExecutionId=EXECUTION)
    replay.answer("DescribeImages", "DescribeImages.self.built", RegionId=BUILD, ImageId="m-0jl8d1ej4mkbbq3ya2lm",
                  ImageOwnerAlias="self")
    replay.answer("DescribeImages", "DescribeImages.self.copy", RegionId=COPY, ImageName=NAME, ImageOwnerAlias="self")
    made = execution_images(client, [BUILD, COPY], EXECUTION)
    assert made.status == "SUCCESS"
    assert made.images == {BUILD: "m-0jl8d1ej4mkbbq3ya2lm", COPY: "m-2zeaq1tbyqs6uyzhs3vx"}


def test_a_region_without_a_copy_of_that_exact_name_gets_none(replay: Replay) -> None:
    replay.answer("DescribeImagePipelineExecutions", "DescribeImagePipelineExecutions.success", RegionId=BUILD,
                  ExecutionId=EXECUTION)
    replay.answer("DescribeImages", "DescribeImages.self.built", RegionId=BUILD, ImageId="m-0jl8d1ej4mkbbq3ya2lm")
    replay.answer("DescribeImages", "DescribeImages.self.none", RegionId=COPY, ImageName=NAME)
    assert execution_images(client, [BUILD, COPY], EXECUTION).images == {BUILD: "m-0jl8d1ej4mkbbq3ya2lm"}


def test_an_unfinished_execution_names_no_image(replay: Replay) -> None:
    replay.answer("DescribeImagePipelineExecutions", "DescribeImagePipelineExecutions.building", RegionId=BUILD,
                  ExecutionId=EXECUTION)
    made = execution_images(client, [BUILD, COPY], EXECUTION)
    assert (made.status, made.images) == ("BUILDING", {})
    assert replay.count("DescribeImages") == 0
