"""The image lock: the shipped file is sound, and each broken lock yields its precise problem."""

from __future__ import annotations

import copy
from datetime import date
from pathlib import Path

import libyaml_files
import pytest

from gpufleet.lock import DEFAULT_LOCK_PATH, LockError, LockProblem, check_lock, load_lock, render_install_env

PROFILE = "cuda12.8-r580"
RAW = libyaml_files.load(DEFAULT_LOCK_PATH.read_text())


def _lock_with(tmp_path: Path, change):
    return load_lock(_write(tmp_path, change))


def _problems(lock, on: date = date(2026, 11, 21), **kwargs) -> list[LockProblem]:
    """The profile's problems, less those of its apt pins: these tests change a label (driver, CUDA) alone, which
    the pins then contradict too; tests/gpufleet/lock/test_lock_apt_pins.py judges the pins."""
    return [p for p in check_lock(lock, on, profile=PROFILE, **kwargs)
            if not p.field.startswith("apt.") and p.field != "driver_pinning_package"]


def test_shipped_lock_passes_today():
    lock = load_lock()
    assert check_lock(lock, date.today()) == []
    assert {"cuda12.8-r580", "cuda13.0-r580"} <= set(lock.profiles)
    assert "cuda12.8-r570" not in lock.profiles


def test_shipped_profiles_cover_required_regions_and_record_sources():
    lock = load_lock()
    for profile in lock.profiles.values():
        assert profile.fabric_manager == profile.driver
        if not profile.baked:
            continue  # ACK installs its driver: tests/gpufleet/lock/test_ack_profile.py
        assert {"driver", "fabric_manager", "cuda", "nccl", "dcgm", "efa_installer", "doca", "erdma"} <= set(
            profile.sources
        )
        # A Kubernetes node image covers the clouds it has a node base for (EKS: aws), baked by its own stack.
        clouds = set(profile.kubernetes.base_images) if profile.kubernetes else set(lock.required_regions)
        for cloud in clouds:
            regions = lock.required_regions[cloud]
            assert set(regions) <= set(profile.images[cloud])
            # Nothing has been baked yet: every image is null with a status and names the stack that bakes it.
            # Alibaba keeps one per boot mode (UEFI and Legacy BIOS), the other clouds one.
            for region in regions:
                entries = profile.image_entries(cloud, region)
                assert list(entries) == (["uefi", "bios"] if cloud == "alicloud" else [None])
                for entry in entries.values():
                    assert (entry.id, entry.status) == (None, "unbaked")
                    assert entry.stack == f"{cloud}-images" + ("-eks" if profile.kubernetes else "")


def test_image_lookups():
    lock = load_lock()
    assert lock.image_entry(PROFILE, "aws", "us-east-1").status == "unbaked"
    assert lock.image_id(PROFILE, "aws", "us-east-1") is None
    assert lock.image_entry(PROFILE, "aws", "eu-west-1") is None
    assert lock.image_entry("nope", "aws", "us-east-1") is None
    # No baked id yet: only the pipeline's parent image is pinned.
    assert lock.image_ids("alicloud") == set()
    # and the Kubernetes node image's base
    assert lock.image_ids("aws") == {lock.base_image("aws", "us-east-1"),
                                     lock.profile_base_image("cuda12.8-r580-eks1.35", "aws", "us-east-1")}


def test_shipped_base_image_is_a_parent_reference_not_a_made_up_id():
    assert load_lock().base_image("aws", "us-east-1") == (
        "ssm:/aws/service/canonical/ubuntu/server/22.04/stable/current/amd64/hvm/ebs-gp2/ami-id"
    )


@pytest.mark.parametrize(
    ("parent", "ok"),
    [
        ("ami-0123456789abcdef0", True),
        ("arn:aws:imagebuilder:us-east-1:aws:image/ubuntu-server-22-lts-x86/2025.1.2", True),
        ("ssm:/aws/service/canonical/ubuntu/server/22.04/stable/current/amd64/hvm/ebs-gp2/ami-id", True),
        ("ami-00000000000000000", False),
        ("arn:aws:imagebuilder:us-east-1:aws:image/ubuntu-server-22-lts-x86/x.x.x", False),
        ("resolve:ssm:/aws/service/canonical/ubuntu/server/22.04/stable/current/amd64/hvm/ebs-gp2/ami-id", False),
        ("ssm:/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64", False),
    ],
)
def test_base_image_must_be_a_pinnable_parent(tmp_path, parent, ok):
    raw = copy.deepcopy(RAW)
    raw["base_images"]["aws"]["us-east-1"]["parent_image"] = parent
    path = tmp_path / "base.yaml"
    path.write_text(libyaml_files.dump(raw))
    problems = [p for p in check_lock(load_lock(path), date(2026, 11, 21)) if p.profile == "base_images"]
    if ok:
        assert problems == []
    else:
        assert [p.field for p in problems] == ["base_images.aws.us-east-1.parent_image"]
        assert "is not a pinnable aws parent image" in problems[0].message


def test_unbaked_and_baked_entries_pass(tmp_path):
    def change(p):
        p["images"]["aws"]["us-east-1"] = {"id": "ami-0123456789abcdef0", "status": "baked"}
        p["images"]["aws"]["us-west-2"] = {"id": None, "status": "unbaked", "stack": "aws-images"}
    lock = _lock_with(tmp_path, change)
    assert _problems(lock) == []
    assert lock.image_id(PROFILE, "aws", "us-east-1") == "ami-0123456789abcdef0"
    assert lock.image_ids("aws") >= {"ami-0123456789abcdef0"}


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"id": None}, r"images\.aws\.us-east-1: id is null: set status: unbaked"),
        ({"id": "ami-0123456789abcdef0", "status": "unbaked"}, r"status is unbaked but id is 'ami-0123456789abcdef0'"),
        ({"id": None, "status": "pending"}, r"images\.aws\.us-east-1\.status: Input should be 'baked' or 'unbaked'"),
        ({"id": None, "status": "unbaked", "from": "x"}, r"images\.aws\.us-east-1\.from: unknown field"),
    ],
)
def test_bad_image_entry_names_the_field(tmp_path, entry, message):
    with pytest.raises(LockError, match=message):
        _lock_with(tmp_path, lambda p: p["images"]["aws"].update({"us-east-1": entry}))


def test_fabric_manager_differs_from_driver(tmp_path):
    lock = _lock_with(tmp_path, lambda p: p.update(fabric_manager="580.82.07"))
    assert _problems(lock) == [LockProblem(
        PROFILE, "fabric_manager",
        "fabric manager 580.82.07 differs from driver 580.126.16: "
        "it must equal the driver exactly or it refuses to start",
    )]


def test_driver_below_cuda_minimum(tmp_path):
    def change(p):
        p.update(cuda="13.0.2", driver="580.65.05", fabric_manager="580.65.05")
    assert _problems(_lock_with(tmp_path, change)) == [LockProblem(
        PROFILE, "driver", "driver 580.65.05 is below the minimum 580.65.06 for CUDA 13.0",
    )]


def test_branch_past_end_of_life(tmp_path):
    lock = load_lock()
    assert _problems(lock, on=date(2028, 6, 30)) == []
    assert _problems(lock, on=date(2028, 7, 1)) == [LockProblem(
        PROFILE, "driver", "driver branch R580 reached end of life on 2028-06-30 (checked for 2028-07-01)",
    )]


def test_r570_is_out_of_the_support_matrix(tmp_path):
    lock = _lock_with(tmp_path, lambda p: p.update(driver="570.172.08", fabric_manager="570.172.08"))
    assert _problems(lock) == [LockProblem(
        PROFILE, "driver", "driver 570.172.08 is on branch R570, out of the support matrix",
    )]


def test_unknown_branch(tmp_path):
    lock = _lock_with(tmp_path, lambda p: p.update(driver="610.10.01", fabric_manager="610.10.01"))
    assert _problems(lock) == [LockProblem(
        PROFILE, "driver", "driver 610.10.01 is on unknown branch R610 (not in driver_branches)",
    )]


@pytest.mark.parametrize(
    "bad", ["ami-123", "ami-0D8985E7403D3EE7F", "ami-0d8985e7403d3ee7", "i-0d8985e7403d3ee7f", "ami-00000000"]
)
def test_malformed_ami_id(tmp_path, bad):
    lock = _lock_with(tmp_path, lambda p: p["images"]["aws"].update({"us-east-1": bad}))
    assert _problems(lock) == [LockProblem(
        PROFILE, "images.aws.us-east-1",
        f"'{bad}' is not a valid aws image id: "
        "expected an AMI id: ami- followed by 8 or 17 lower-case hex digits",
    )]


def test_azure_urn_needs_explicit_version_and_gallery_ids_pass(tmp_path):
    def change(p):
        p["images"]["azure"]["eastus"] = "microsoft-dsvm:ubuntu-hpc:2204:22.04.2025041101"
        p["images"]["azure"]["southcentralus"] = "microsoft-dsvm:ubuntu-hpc:2204"
    problems = _problems(_lock_with(tmp_path, change))
    assert [(p.field, p.message.split(":")[0]) for p in problems] == [
        ("images.azure.southcentralus", "'microsoft-dsvm")
    ]


def test_latest_anywhere_is_refused(tmp_path):
    def change(p):
        p["nccl"] = "latest"
        p["images"]["azure"]["eastus"] = "microsoft-dsvm:ubuntu-hpc:2204:latest"
    assert _problems(_lock_with(tmp_path, change)) == [
        LockProblem(PROFILE, "nccl", "'latest' says 'latest': pin an exact version"),
        LockProblem(
            PROFILE, "images.azure.eastus",
            "'microsoft-dsvm:ubuntu-hpc:2204:latest' says 'latest': pin an exact version",
        ),
    ]


def test_missing_required_region(tmp_path):
    lock = _lock_with(tmp_path, lambda p: p["images"]["alicloud"].pop("cn-beijing"))
    assert _problems(lock) == [LockProblem(
        PROFILE, "images.alicloud.cn-beijing", "no image for required region alicloud/cn-beijing",
    )]
    assert _problems(load_lock(), required_regions={"aws": {"eu-west-1"}}) == [LockProblem(
        PROFILE, "images.aws.eu-west-1", "no image for required region aws/eu-west-1",
    )]


def test_unknown_profile():
    assert check_lock(load_lock(), date(2026, 11, 21), profile="cuda12.8-r570") == [LockProblem(
        "cuda12.8-r570", "profile",
        "no such profile in the lock (known: cuda12.8-r570-ack, cuda12.8-r580, cuda12.8-r580-eks1.35, cuda13.0-r580)",
    )]


def test_malformed_yaml_and_schema_name_the_field(tmp_path):
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("profiles: [unclosed")
    with pytest.raises(LockError, match="not valid YAML"):
        load_lock(bad_yaml)
    with pytest.raises(LockError, match=r"profiles\.cuda12\.8-r580: .*dcgm: required where installed_by is bake"):
        load_lock(_write(tmp_path, lambda p: p.pop("dcgm")))
    with pytest.raises(LockError, match=r"fabric\.aws: missing aws_ofi_nccl"):
        load_lock(_write(tmp_path, lambda p: p["fabric"]["aws"].pop("aws_ofi_nccl")))
    with pytest.raises(LockError, match="cannot read"):
        load_lock(tmp_path / "absent.yaml")


def _write(tmp_path: Path, change) -> Path:
    raw = copy.deepcopy(RAW)
    change(raw["profiles"][PROFILE])
    path = tmp_path / "changed.yaml"
    path.write_text(libyaml_files.dump(raw))
    return path


def test_render_install_env():
    lock = load_lock()
    env = render_install_env(lock.profiles["cuda13.0-r580"], "azure")
    assert "DRIVER_VERSION=580.126.16\n" in env
    assert "FABRIC_MANAGER_VERSION=580.126.16\n" in env
    assert "APT_PINS='cuda-toolkit-13-0=13.0.2-1 " in env
    assert "libnccl2=2.28.9-1+cuda13.0" in env
    assert "DOCA_SHA256=c9758f9029393b749908f0485827004dafa8cc0e24313f1f2bdae2406050ddfd\n" in env
    assert "EFA_INSTALLER" not in env
    with pytest.raises(ValueError, match="cloud: unknown cloud 'gcp'"):
        render_install_env(lock.profiles["cuda13.0-r580"], "gcp")
