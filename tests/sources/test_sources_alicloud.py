"""Alibaba Cloud readers of `lock resolve` through the official SDK V2 clients (alibabacloud_cs20151215,
alibabacloud_ecs20140526) built by the module's own factories, answered at the HTTP layer by `responses` with recorded
bodies (tests/alicloud_replay.py): signing, retries and deserialisation are the SDK's. Each answer is chosen by the
request's action and parameters, so a request with a wrong parameter gets no answer and fails. Also the images an
image pipeline execution made (gpufleet/sources/alicloud_execution.py), for `images pin`."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest
import responses
from alicloud_replay import FAST, FIXTURES, Replay, static_key

from gpufleet.sources.alicloud import (
    ack_addon_versions,
    ack_kubernetes_version,
    alicloud_base_image,
    default_cs_client,
    default_ecs_client,
)
from gpufleet.sources.alicloud_execution import execution_images
from gpufleet.sources.http import SourceError

SOURCES = Path(__file__).parent.parent / "data" / "sources" / "alicloud"
REGION = "cn-wulanchabu"
NOW = datetime(2026, 10, 1, 12, 0, tzinfo=timezone.utc)
UEFI_22_04 = r"^ubuntu_22_04_uefi_x64_20G_alibase_[0-9]{8}\.vhd$"  # images/lock.yaml base_images name_regex
ANY_22_04 = r"ubuntu_22_04_(uefi_)?x64_20G_alibase_[0-9]{8}\.vhd"
VERSION_QUERY = {"Region": REGION, "ClusterType": "ManagedKubernetes", "Profile": "Default"}
ADDON_QUERY = {"region_id": REGION, "cluster_type": "ManagedKubernetes", "profile": "Default",
               "cluster_spec": "ack.pro.small", "cluster_version": "1.34.10-aliyun.1"}
IMAGE_QUERY = {"RegionId": REGION, "ImageOwnerAlias": "system", "Status": "Available", "PageSize": "100"}


@pytest.fixture
def replay() -> Iterator[Replay]:
    """Recorded answers from tests/data/sources/alicloud, then preflight's (the shared error bodies)."""
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        answers = Replay(mock, SOURCES, FIXTURES)
        yield answers
        assert not answers.unexpected, answers.unexpected


def cs() -> object:
    return default_cs_client(REGION, credential=static_key(), retry=FAST)


def ecs() -> object:
    return default_ecs_client(REGION, credential=static_key(), retry=FAST)


def images(replay: Replay) -> None:
    replay.answer("DescribeImages", "DescribeImages.system.page1", PageNumber="1", **IMAGE_QUERY)
    replay.answer("DescribeImages", "DescribeImages.system.page2", PageNumber="2", **IMAGE_QUERY)


# --- ACK version ---------------------------------------------------------------------------------------------------

def test_ack_newest_creatable_version_of_the_minor(replay: Replay) -> None:
    replay.answer("DescribeKubernetesVersionMetadata", "DescribeKubernetesVersionMetadata.1.34",
                  KubernetesVersion="1.34", **VERSION_QUERY)
    fact = ack_kubernetes_version(cs(), REGION, "1.34", now=NOW)
    assert fact.version == "1.34.10-aliyun.1"  # newer than 1.34.3 as numbers; 1.34.1 is not creatable
    assert fact.read_at == NOW
    assert fact.source == ("cs:DescribeKubernetesVersionMetadata Region=cn-wulanchabu ClusterType=ManagedKubernetes "
                           "Profile=Default KubernetesVersion=1.34")
    assert replay.count("DescribeKubernetesVersionMetadata") == 1


def test_ack_minor_not_creatable_names_what_is_listed(replay: Replay) -> None:
    replay.answer("DescribeKubernetesVersionMetadata", "DescribeKubernetesVersionMetadata.not-creatable",
                  KubernetesVersion="1.31", **VERSION_QUERY)
    with pytest.raises(SourceError) as raised:
        ack_kubernetes_version(cs(), REGION, "1.31")
    assert ("ACK offers no 1.31 version to create a cluster on in cn-wulanchabu; it lists 1.31.9-aliyun.1 "
            "(not creatable)") in str(raised.value)


# --- ACK add-ons ---------------------------------------------------------------------------------------------------

def test_ack_addon_versions_with_their_schemas(replay: Replay) -> None:
    replay.answer("ListAddons", "ListAddons.1.34", **ADDON_QUERY)
    names = ["terway-controlplane", "terway-eniip", "ack-erdma-controller", "ack-ai-installer", "ack-arms-prometheus"]
    facts = ack_addon_versions(cs(), REGION, "1.34.10-aliyun.1", names, now=NOW)
    assert {n: f.version for n, f in facts.items()} == {
        "terway-controlplane": "v1.14.3", "terway-eniip": "v1.14.3", "ack-erdma-controller": "2.1.1",
        "ack-ai-installer": "1.11.2", "ack-arms-prometheus": "1.1.35"}
    schema = facts["terway-controlplane"].config_schema
    assert schema is not None and schema["properties"]["NetworkPolicy"]["type"] == "boolean"
    assert facts["ack-arms-prometheus"].config_schema["properties"]["gpuMetrics"]["default"] is True
    assert facts["ack-erdma-controller"].config_schema is None  # an empty schema
    assert facts["ack-ai-installer"].config_schema is None  # none given
    assert facts["terway-eniip"].source == (
        "cs:ListAddons region_id=cn-wulanchabu cluster_type=ManagedKubernetes profile=Default "
        "cluster_spec=ack.pro.small cluster_version=1.34.10-aliyun.1")


def test_ack_addon_not_offered_names_the_ones_listed(replay: Replay) -> None:
    replay.answer("ListAddons", "ListAddons.1.34", **ADDON_QUERY)
    with pytest.raises(SourceError) as raised:
        ack_addon_versions(cs(), REGION, "1.34.10-aliyun.1", ["terway-eniip", "ack-erdma", "gpushare"])
    assert ("ACK offers no ack-erdma, gpushare for this cluster; it lists ack-ai-installer, ack-arms-prometheus, "
            "ack-erdma-controller, coredns, terway-controlplane, terway-eniip") in str(raised.value)


# --- ECS base image ------------------------------------------------------------------------------------------------

def test_newest_matching_image_across_pages(replay: Replay) -> None:
    images(replay)
    fact = alicloud_base_image(ecs(), REGION, UEFI_22_04, now=NOW)
    assert (fact.image_id, fact.name, fact.boot_mode) == (
        "ubuntu_22_04_uefi_x64_20G_alibase_20251015.vhd", "ubuntu_22_04_uefi_x64_20G_alibase_20251015.vhd", "UEFI")
    assert fact.source == f"ecs:DescribeImages RegionId=cn-wulanchabu ImageOwnerAlias=system Status=Available " \
                          f"name~{UEFI_22_04}"
    assert [p["PageNumber"] for action, p in replay.calls if action == "DescribeImages"] == ["1", "2"]


@pytest.mark.parametrize(("boot_mode", "image_id"), [
    (None, "ubuntu_22_04_x64_20G_alibase_20251101.vhd"),  # the newest by CreationTime, whatever it boots
    ("UEFI", "ubuntu_22_04_uefi_x64_20G_alibase_20251015.vhd"),
    ("BIOS", "ubuntu_22_04_x64_20G_alibase_20251101.vhd"),
])
def test_boot_mode_filter(replay: Replay, boot_mode: str | None, image_id: str) -> None:
    images(replay)
    fact = alicloud_base_image(ecs(), REGION, ANY_22_04, boot_mode=boot_mode)
    assert (fact.image_id, fact.boot_mode) == (image_id, boot_mode or "BIOS")


def test_no_image_of_the_boot_mode_names_those_named_so(replay: Replay) -> None:
    images(replay)
    with pytest.raises(SourceError) as raised:
        alicloud_base_image(ecs(), REGION, UEFI_22_04, boot_mode="UEFI-Preferred")
    assert (f"no image named like {UEFI_22_04} boots UEFI-Preferred; those named so: "
            "ubuntu_22_04_uefi_x64_20G_alibase_20250807.vhd (UEFI), "
            "ubuntu_22_04_uefi_x64_20G_alibase_20251015.vhd (UEFI)") in str(raised.value)


def test_no_image_name_matches_names_the_newest(replay: Replay) -> None:
    images(replay)
    with pytest.raises(SourceError) as raised:
        alicloud_base_image(ecs(), REGION, r"ubuntu_22_04_uefi_x64_40G_alibase_[0-9]{8}\.vhd")
    message = str(raised.value)
    assert "no Available system image's name fully matches" in message
    assert "among 102; the newest: ubuntu_24_04_uefi_x64_20G_alibase_20251120.vhd, " \
           "ubuntu_22_04_x64_20G_alibase_20251101.vhd, ubuntu_22_04_uefi_x64_20G_alibase_20251015.vhd" in message


# --- refusals and credentials --------------------------------------------------------------------------------------

def test_refused_credentials_say_how_to_refresh(replay: Replay) -> None:
    replay.answer("DescribeImages", "error.InvalidAccessKeyId")
    with pytest.raises(SourceError) as raised:
        alicloud_base_image(ecs(), REGION, UEFI_22_04)
    assert "Alibaba Cloud refused the credentials (InvalidAccessKeyId.NotFound" in str(raised.value)


def test_denied_names_the_ram_action(replay: Replay) -> None:
    replay.answer("DescribeImages", "error.Forbidden.RAM")
    with pytest.raises(SourceError) as raised:
        alicloud_base_image(ecs(), REGION, UEFI_22_04)
    assert "denied (Forbidden.RAM: User not authorized" in str(raised.value)
    assert "grant the caller the read-only RAM action ecs:DescribeImages" in str(raised.value)


def test_no_credentials_in_the_default_chain(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_SECURITY_TOKEN",
                 "ALIBABA_CLOUD_ECS_METADATA", "ALIBABA_CLOUD_CREDENTIALS_FILE", "ALIBABA_CLOUD_PROFILE",
                 "ALIBABA_CLOUD_ROLE_ARN", "ALIBABA_CLOUD_OIDC_PROVIDER_ARN", "ALIBABA_CLOUD_OIDC_TOKEN_FILE",
                 "ALIBABA_CLOUD_CREDENTIALS_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.aliyun/config.json, no ~/.alibabacloud/credentials.ini
    monkeypatch.setenv("ALIBABA_CLOUD_ECS_METADATA_DISABLED", "true")
    with pytest.raises(SourceError, match=r"no Alibaba Cloud credentials: the Alibaba Cloud default credential chain"):
        default_cs_client(REGION)


# --- the images an execution made -------------------------------------------------------------------------------
EXECUTION = "exec-0jl7kp9a3i5ilu6xbm2s"
BUILD, COPY = "cn-wulanchabu", "cn-beijing"
NAME = "gpufleet-cuda12.8-r580-uefi_20261001T100000"


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
