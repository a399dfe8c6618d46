"""The lock's in-cluster pins: a digest always has a source, a missing one says how to read it, and the images the
rendered manifests name are the ones the lock pins (same repository and tag)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from components.kubernetes.manifests import MANIFESTS, containers, read_manifest
from gpufleet.lock import load_lock
from gpufleet.lock.kubernetes_components import UNPUBLISHED, ImagePin, NodeCheckPin

PINS = load_lock().kubernetes_components
DIGEST = "sha256:" + "0" * 64


def test_a_digest_needs_its_source_and_a_null_one_its_way_to_be_read():
    with pytest.raises(ValidationError, match="digest needs digest_source"):
        ImagePin(image="registry.k8s.io/x/y:v1", digest=DIGEST)
    with pytest.raises(ValidationError, match="say in `unconfirmed` how to read it"):
        ImagePin(image="registry.k8s.io/x/y:v1", digest=None)
    with pytest.raises(ValidationError, match="image"):
        ImagePin(image=f"registry.k8s.io/x/y@{DIGEST}", digest=DIGEST, digest_source="somewhere")
    pin = ImagePin(image="registry.k8s.io/x/y:v1", digest=DIGEST, digest_source="kubernetes/k8s.io images.yaml")
    assert pin.reference == f"registry.k8s.io/x/y:v1@{DIGEST}"


def test_the_shipped_pins_name_their_sources():
    assert PINS is not None
    for name, component in PINS:
        if isinstance(component, NodeCheckPin):
            continue  # the project's own image: no upstream source (test below)
        assert len(component.source.split("@")[1].split()[0]) == 40, name  # repository path@<40-hex commit>
        for image in component.images.values():
            assert (image.digest is None) == bool(image.unconfirmed), image.image


@pytest.mark.parametrize("manifest, component", [
    ("nvidia-device-plugin", "nvidia_device_plugin"),
    ("node-feature-discovery", "node_feature_discovery"),
    ("aws-efa-k8s-device-plugin", "efa_device_plugin"),
    ("dcgm-exporter", "dcgm_exporter"),
])
def test_the_rendered_manifests_run_the_images_the_lock_pins(manifest, component):
    rendered = {c["image"] for obj in read_manifest(manifest).objects if "template" in obj.get("spec", {})
                for c in containers(obj)}
    assert rendered == {pin.image for pin in getattr(PINS, component).images.values()}


def test_the_operator_manifests_run_the_operator_images_the_lock_pins():
    rendered = {c["image"] for obj in read_manifest("gpu-operator").objects if "template" in obj.get("spec", {})
                for c in containers(obj)}
    assert rendered == {PINS.gpu_operator.images["gpu-operator"].image}
    rendered = {c["image"] for obj in read_manifest("network-operator").objects
                if "template" in obj.get("spec", {}) for c in containers(obj)}
    assert rendered == {PINS.network_operator.images["network-operator"].image}


def test_the_unpublished_node_check_image_is_refused_until_pinned():
    assert PINS.node_check.image is None and PINS.node_check.reference == UNPUBLISHED
    assert UNPUBLISHED in PINS.unconfirmed_images()
    with pytest.raises(ValidationError, match="say in `unconfirmed` what is missing"):
        NodeCheckPin(image=None, digest=None)
    pinned = NodeCheckPin(image="ghcr.io/x/nodecheck:v1", digest=DIGEST)
    assert pinned.reference == f"ghcr.io/x/nodecheck:v1@{DIGEST}"


def test_every_manifest_names_its_source_and_one_without_a_header_is_refused(tmp_path, monkeypatch):
    for path in sorted(MANIFESTS.glob("*.yaml")):
        manifest = read_manifest(path.stem)
        assert manifest.repository.count("/") == 1 and manifest.files and manifest.objects
    (tmp_path / "bare.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n")
    monkeypatch.setattr("components.kubernetes.manifests.MANIFESTS", tmp_path)
    with pytest.raises(ValueError, match="bare.yaml: the header names no source repository"):
        read_manifest("bare")
