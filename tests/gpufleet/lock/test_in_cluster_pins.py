"""`images check` over the in-cluster pins: each image without a digest is a note (exit unchanged), each AKS stack's
driver container (its profile's driver on the Ubuntu of its Kubernetes minor) must be the one the lock pins (exit 1
naming the field and the stack), each ACK stack's driver must be one ACK lists (exit 1 naming the stack), and a
malformed pin is refused naming its field (exit 2)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import libyaml_files
from conftest import read_cluster, write_stack
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.lock import DEFAULT_LOCK_PATH, load_lock
from gpufleet.lock.in_cluster_pins import DRIVER_FIELD
from gpufleet.yaml_model import read_yaml

runner = CliRunner()
PROFILE = "cuda12.8-r580"  # the shipped AKS stacks' profile
AKS_STACK = "azure-train-aks"


def _lock_with(tmp_path: Path, change: Any) -> Path:
    """A copy of the shipped lock with `change(kubernetes_components)` applied (anchors resolved)."""
    raw = read_yaml(DEFAULT_LOCK_PATH)
    change(raw["kubernetes_components"])
    path = tmp_path / "lock.yaml"
    path.write_text(libyaml_files.dump(raw))
    return path


def _stacks_with(tmp_path: Path, version: str) -> Path:
    """A stacks directory holding the shipped AKS stack at another Kubernetes minor."""
    cluster = copy.deepcopy(read_cluster(AKS_STACK))
    cluster["scheduler"]["version"] = version
    directory = tmp_path / "stacks"
    directory.mkdir()
    write_stack(directory, AKS_STACK, cluster)
    return directory


def _check(*args: str) -> tuple[int, dict[str, Any]]:
    done = runner.invoke(app, ["images", "check", "--format", "json", *args])
    return done.exit_code, json.loads(done.stdout)


def _driver_problems(document: dict[str, Any]) -> list[dict[str, str]]:
    return [p for p in document["problems"] if p["field"] == DRIVER_FIELD]


def test_the_shipped_aks_stacks_pull_the_pinned_driver_and_every_unconfirmed_digest_is_noted() -> None:
    _, document = _check()
    assert _driver_problems(document) == []
    pins = load_lock().kubernetes_components
    assert pins is not None
    noted = {n["field"] for n in document["notes"] if n["profile"] == "kubernetes_components"}
    unconfirmed = {f"kubernetes_components.{key}.digest" for key, _ in pins.unconfirmed()}
    assert unconfirmed and noted == unconfirmed | {"kubernetes_components.node_check"}


def test_one_profile_checked_leaves_out_the_lock_wide_pin_notes_but_checks_its_aks_stacks(tmp_path: Path) -> None:
    lock = _lock_with(tmp_path, lambda pins: pins["gpu_operator"]["images"]["driver"].update(
        image="nvcr.io/nvidia/driver:580.126.16-ubuntu22.04"))
    _, document = _check("--profile", PROFILE, "--lock", str(lock))
    assert not [n for n in document["notes"] if n["profile"] == "kubernetes_components"]
    assert {p["message"].split(":")[0] for p in _driver_problems(document)} == {
        "stack azure-infer-aks", "stack azure-train-aks"}
    _, other = _check("--profile", "cuda13.0-r580", "--lock", str(lock))
    assert _driver_problems(other) == []


def test_a_driver_tag_for_another_ubuntu_fails_naming_the_stack_and_the_tag_it_pulls(tmp_path: Path) -> None:
    lock = _lock_with(tmp_path, lambda pins: pins["gpu_operator"]["images"]["driver"].update(
        image="nvcr.io/nvidia/driver:580.126.16-ubuntu22.04"))
    code, document = _check("--lock", str(lock), "--stacks-dir", str(_stacks_with(tmp_path, "1.36")))
    assert code == 1
    (problem,) = _driver_problems(document)
    assert problem["profile"] == PROFILE
    assert problem["message"].startswith(f"stack {AKS_STACK}: its nodes pull nvcr.io/nvidia/driver:580.126.16-"
                                         "ubuntu24.04 (driver 580.126.16 on Kubernetes 1.36)")


def test_a_stack_on_kubernetes_1_34_needs_the_ubuntu_22_04_driver(tmp_path: Path) -> None:
    code, document = _check("--stacks-dir", str(_stacks_with(tmp_path, "1.34")))
    assert code == 1
    (problem,) = _driver_problems(document)
    assert "nvcr.io/nvidia/driver:580.126.16-ubuntu22.04" in problem["message"]


def test_a_minor_whose_node_os_is_unknown_is_a_problem_not_a_traceback(tmp_path: Path) -> None:
    _, document = _check("--stacks-dir", str(_stacks_with(tmp_path, "1.33")))
    (problem,) = _driver_problems(document)
    assert "kubernetes version 1.33: the Ubuntu release of its AKS nodes is not known here" in problem["message"]


def test_a_digest_without_its_source_is_refused_naming_the_field(tmp_path: Path) -> None:
    lock = _lock_with(tmp_path, lambda pins: pins["gpu_operator"]["images"]["driver"].update(
        digest="sha256:" + "0" * 64, unconfirmed=None))
    done = runner.invoke(app, ["images", "check", "--lock", str(lock)])
    assert done.exit_code == 2
    assert "kubernetes_components.gpu_operator.images.driver" in done.output
    assert "digest needs digest_source" in done.output


def test_a_pinned_digest_is_no_longer_noted(tmp_path: Path) -> None:
    lock = _lock_with(tmp_path, lambda pins: pins["gpu_operator"]["images"]["driver"].update(
        digest="sha256:" + "0" * 64, unconfirmed=None, digest_source="a test's own copy of the lock"))
    _, document = _check("--lock", str(lock))
    fields = {n["field"] for n in document["notes"]}
    assert "kubernetes_components.gpu_operator.images.driver.digest" not in fields
    assert "kubernetes_components.gpu_operator.images.gpu-operator.digest" in fields


def _ack_stacks(tmp_path: Path, image: str) -> Path:
    """A stacks directory holding the shipped ACK training stack on `image`."""
    cluster = copy.deepcopy(read_cluster("alicloud-train-ack"))
    cluster["image"] = image
    directory = tmp_path / "ack-stacks"
    directory.mkdir()
    write_stack(directory, "alicloud-train-ack", cluster)
    return directory


def test_an_ack_stack_whose_driver_ack_does_not_list_fails_naming_the_stack(tmp_path: Path) -> None:
    code, document = _check("--stacks-dir", str(_ack_stacks(tmp_path, PROFILE)))
    assert code == 1
    (problem,) = [p for p in document["problems"] if p["message"].startswith("stack alicloud-train-ack:")]
    assert (problem["profile"], problem["field"]) == (PROFILE, "driver")
    assert "NVIDIA driver 580.126.16 is not in ACK's driver list" in problem["message"]


def test_an_ack_stack_on_a_listed_driver_passes_the_driver_check(tmp_path: Path) -> None:
    raw = read_yaml(DEFAULT_LOCK_PATH)
    raw["profiles"][PROFILE]["driver"] = "570.133.20"  # in gpufleet/catalog/ack.yaml's drivers
    lock = tmp_path / "lock.yaml"
    lock.write_text(libyaml_files.dump(raw))
    _, document = _check("--lock", str(lock), "--stacks-dir", str(_ack_stacks(tmp_path, PROFILE)))
    assert not [p for p in document["problems"] if p["message"].startswith("stack alicloud-train-ack:")]
