"""A profile's `kubernetes:` section: the lock refuses a malformed one naming the field (exit 2), and `images check`
fails on each broken Kubernetes pin of an otherwise sound lock."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import libyaml_files
import pytest
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.lock import DEFAULT_LOCK_PATH, LockError, check_lock, load_lock
from gpufleet.lock.kubernetes_nodes import node_image_mismatch
from gpufleet.yaml_model import read_yaml

PROFILE = "cuda12.8-r580-eks1.35"
ON = date(2026, 11, 25)
runner = CliRunner()


def _lock_with(tmp_path: Path, change: Any) -> Path:
    """A copy of the shipped lock with `change(profile)` applied to the Kubernetes profile (anchors resolved)."""
    raw = read_yaml(DEFAULT_LOCK_PATH)
    change(raw["profiles"][PROFILE])
    path = tmp_path / "lock.yaml"
    path.write_text(libyaml_files.dump(raw))
    return path


def _section(profile: dict[str, Any]) -> dict[str, Any]:
    return profile["kubernetes"]


def test_the_shipped_kubernetes_profile_passes_and_reuses_the_vm_profiles_stack():
    lock = load_lock()
    assert check_lock(lock, ON, profile=PROFILE) == []
    node, vm = lock.profiles[PROFILE], lock.profiles["cuda12.8-r580"]
    assert (node.driver, node.cuda, node.nccl, node.apt) == (vm.driver, vm.cuda, vm.nccl, vm.apt)
    assert node.fabric["aws"] == vm.fabric["aws"] and node.agents["aws"] == vm.agents["aws"]
    assert node.kubernetes is not None and vm.kubernetes is None
    assert all(e.id is None and e.status == "unbaked" for e in node.images["aws"].values())


@pytest.mark.parametrize(("change", "field"), [
    (lambda p: _section(p).update(version="1.35.2"), "kubernetes.version"),
    (lambda p: _section(p).update(version="latest"), "kubernetes.version"),
    (lambda p: _section(p).update(ubuntu="20.04"), "kubernetes"),
    (lambda p: _section(p)["container_toolkit"]["apt"].pop("libnvidia-container1"), "kubernetes.container_toolkit"),
    (lambda p: _section(p)["container_toolkit"].update(key_fingerprint="DDCAE044F796ECB0"),
     "kubernetes.container_toolkit.key_fingerprint"),
    (lambda p: _section(p)["container_toolkit"].update(version="1.20"), "kubernetes.container_toolkit.version"),
    (lambda p: _section(p).update(kubelet_unrecorded=None), "kubernetes"),
    (lambda p: _section(p).update(kubelet="1.34.2", kubelet_unrecorded=None), "kubernetes"),
    (lambda p: _section(p).pop("kubelet"), "kubernetes.kubelet"),
    (lambda p: _section(p).update(base_images={}), "kubernetes.base_images"),
    (lambda p: _section(p).update(extra=1), "kubernetes.extra"),
])
def test_a_malformed_section_is_refused_naming_the_field(tmp_path, change, field):
    path = _lock_with(tmp_path, change)
    with pytest.raises(LockError) as raised:
        load_lock(path)
    assert f"profiles.{PROFILE}.{field}" in str(raised.value)
    done = runner.invoke(app, ["images", "check", "--lock", str(path)])
    assert done.exit_code == 2 and f"profiles.{PROFILE}.{field}" in done.output


def test_a_recorded_kubelet_of_the_minor_loads_and_is_no_longer_noted(tmp_path):
    path = _lock_with(tmp_path, lambda p: _section(p).update(kubelet="1.35.0", kubelet_unrecorded=None))
    assert load_lock(path).profiles[PROFILE].kubernetes.kubelet == "1.35.0"  # type: ignore[union-attr]
    done = runner.invoke(app, ["images", "check", "--lock", str(path), "--profile", PROFILE, "--format", "json"])
    # Only the facts no resolve has read yet remain noted (gpufleet lock resolve), not the kubelet.
    assert {n["profile"] for n in json.loads(done.stdout)["notes"]} == {"resolved"}


@pytest.mark.parametrize(("change", "field", "message"), [
    (lambda p: _section(p)["container_toolkit"]["apt"].update({"libnvidia-container1": "1.19.1-1"}),
     "kubernetes.container_toolkit.apt.libnvidia-container1", "1.19.1-1 is not toolkit 1.20.0"),
    (lambda p: _section(p).update(version="1.34"), "kubernetes.base_images.aws.us-east-1.parent_image",
     "is not Canonical's EKS 1.34 image on Ubuntu 24.04"),
    (lambda p: _section(p).update(ubuntu="22.04"), "kubernetes.base_images.aws.us-east-1.parent_image",
     "expected 'ssm:/aws/service/canonical/ubuntu/eks/22.04/1.35/stable/current/amd64/hvm/ebs-gp2/ami-id'"),
    (lambda p: _section(p)["base_images"]["aws"]["us-east-1"].update(parent_image="ami-latest"),
     "kubernetes.base_images.aws.us-east-1.parent_image", "says 'latest'"),
    (lambda p: p["sources"].pop("kubernetes.container_toolkit"), "sources.kubernetes.container_toolkit",
     "no source recorded"),
    (lambda p: p["sources"].pop("kubernetes.base_images"), "sources.kubernetes.base_images", "no source recorded"),
    (lambda p: p["cuda_keyring"].update(url=p["cuda_keyring"]["url"].replace("2404", "2204")), "cuda_keyring.url",
     "is not the CUDA repository of Ubuntu 24.04"),
    (lambda p: p["images"].update(azure={"eastus": {"id": None, "status": "unbaked"}}), "images.azure",
     "no kubernetes.base_images.azure"),
])
def test_check_fails_on_each_broken_kubernetes_pin(tmp_path, change, field, message):
    lock = load_lock(_lock_with(tmp_path, change))
    problems = [p for p in check_lock(lock, ON, profile=PROFILE) if p.field == field]
    assert problems and message in problems[0].message, check_lock(lock, ON, profile=PROFILE)


def test_only_the_kubernetes_profile_has_its_own_base_image():
    lock = load_lock()
    assert lock.profile_base_image(PROFILE, "aws", "us-east-1") == (
        "ssm:/aws/service/canonical/ubuntu/eks/24.04/1.35/stable/current/amd64/hvm/ebs-gp3/ami-id")
    assert lock.profile_base_image(PROFILE, "aws", "eu-west-1") is None
    assert lock.profile_base_image("cuda12.8-r580", "aws", "us-east-1") == lock.base_image("aws", "us-east-1")


def test_which_clusters_can_boot_which_node_image():
    lock = load_lock()
    node, vm = lock.profiles[PROFILE].kubernetes, lock.profiles["cuda12.8-r580"].kubernetes
    assert node_image_mismatch(node, PROFILE, "1.35") is None
    assert node_image_mismatch(vm, "cuda12.8-r580", None) is None
    assert "is a Kubernetes 1.35 node image; the cluster runs Kubernetes 1.34" in str(
        node_image_mismatch(node, PROFILE, "1.34"))
    assert "has no kubernetes section" in str(node_image_mismatch(vm, "cuda12.8-r580", "1.35"))
    assert "a cluster without a Kubernetes scheduler boots a VM profile" in str(
        node_image_mismatch(node, PROFILE, None))
