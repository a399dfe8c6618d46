"""The Kubernetes node image's bake: the image stack naming a Kubernetes profile builds on Canonical's EKS image of its
minor with the container toolkit in its bundle; `images pin` writes its AMIs; `images check` reports its kubelet."""

from __future__ import annotations

import base64
import gzip
import io
import json
import re
import shutil
import tarfile
from pathlib import Path

import pytest
from conftest import shipped_plan
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.lock import DEFAULT_LOCK_PATH, load_lock

PROFILE = "cuda12.8-r580-eks1.35"
EKS_BASE = "ssm:/aws/service/canonical/ubuntu/eks/24.04/1.35/stable/current/amd64/hvm/ebs-gp3/ami-id"
VM_BASE = "ssm:/aws/service/canonical/ubuntu/server/22.04/stable/current/amd64/hvm/ebs-gp2/ami-id"
EKS_BASE_AMI = "ami-0e1d2c3b4a5968778"  # what `lock resolve --only base` recorded behind EKS_BASE: the bake's parent
runner = CliRunner()


def _bundle(stack: str) -> tuple[str, dict[str, bytes]]:
    """The recipe's parent image and the files of the installer bundle its components carry, reassembled in run
    order from the registered component documents."""
    plan = shipped_plan(stack)
    (recipe,) = [r for r in plan.resources if r.type == "aws:imagebuilder/imageRecipe:ImageRecipe"]
    components = [r for r in plan.resources if r.type == "aws:imagebuilder/component:Component"]
    parts = sorted((c for c in components if "-part" in c.name), key=lambda c: int(c.name.rsplit("part", 1)[1]))
    payload = "".join(re.search(r"printf %s '([A-Za-z0-9+/=]+)'", c.inputs["data"])[1] for c in parts)
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(base64.b64decode(payload)))) as archive:
        files = {m.name: archive.extractfile(m).read() for m in archive.getmembers() if m.isfile()}  # type: ignore[union-attr]
    return recipe.inputs["parentImage"], files


def test_the_kubernetes_stack_bakes_on_canonicals_eks_image_with_the_toolkit():
    parent, files = _bundle("aws-images-eks")
    assert parent == EKS_BASE
    pins = files["pins.env"].decode()
    assert "GPUFLEET_PROFILE=cuda12.8-r580-eks1.35\n" in pins and "KUBERNETES_VERSION=1.35\n" in pins
    assert "CONTAINER_TOOLKIT_VERSION=1.20.0\n" in pins
    assert "images/install/container-toolkit.sh" in files


def test_the_vm_stack_keeps_the_server_image_and_no_toolkit_pins():
    parent, files = _bundle("aws-images")
    assert parent == VM_BASE
    assert "KUBERNETES_VERSION" not in files["pins.env"].decode()


@pytest.fixture
def lock_file(tmp_path: Path) -> Path:
    path = tmp_path / "lock.yaml"
    shutil.copyfile(DEFAULT_LOCK_PATH, path)
    return path


def _outputs(tmp_path: Path, stack: str) -> str:
    outputs = {
        "amis": {"us-east-1": "ami-0123456789abcdef0", "us-west-2": "ami-0fedcba9876543210"},
        "cloud": "aws",
        "image_arn": "arn:aws:imagebuilder:us-east-1:111122223333:image/gpufleet-cuda12-8-r580-eks1-35/1.0.42/1",
        "parent_image": EKS_BASE_AMI,
        "profile": PROFILE,
        "project": "gpufleet",
        "stack": stack,
    }
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    return str(path)


def test_pin_writes_the_node_images_amis_and_its_base_and_check_still_notes_the_kubelet(tmp_path, lock_file):
    done = runner.invoke(app, ["images", "pin", "--stack", "aws-images-eks", "--lock", str(lock_file),
                               "--outputs", _outputs(tmp_path, "aws-images-eks")])
    assert done.exit_code == 0, done.output
    profile = load_lock(lock_file).profiles[PROFILE]
    entry = profile.images["aws"]["us-east-1"]
    assert (entry.id, entry.status, entry.base_image) == ("ami-0123456789abcdef0", "baked", EKS_BASE_AMI)
    assert profile.kubernetes is not None and profile.kubernetes.kubelet is None
    # The VM profile sharing its versions is untouched.
    assert load_lock(lock_file).profiles["cuda12.8-r580"].images["aws"]["us-east-1"].id is None
    checked = runner.invoke(app, ["images", "check", "--lock", str(lock_file), "--profile", PROFILE,
                                  "--format", "json"])
    report = json.loads(checked.stdout)
    assert not [p for p in report["problems"] if p["field"].startswith(("kubernetes", "images"))]
    assert [n["field"] for n in report["notes"] if n["profile"] != "resolved"] == ["kubernetes.kubelet"]
    assert report["notes"][0]["message"].startswith("unrecorded: ")


def test_pin_refuses_the_node_images_amis_from_the_vm_image_stack(tmp_path, lock_file):
    done = runner.invoke(app, ["images", "pin", "--stack", "aws-images", "--lock", str(lock_file),
                               "--outputs", _outputs(tmp_path, "aws-images")])
    assert done.exit_code == 2
    assert "baked by stack 'aws-images-eks', not 'aws-images'" in done.output
