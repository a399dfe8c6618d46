"""A digest the lock pins for an image an operator pulls is written where that operator reads it, so the node pulls
exactly the pinned manifest: NVIDIADriver `version` (the GPU Operator appends no OS suffix to a digest),
NicClusterPolicy `ofedDriver.version` (no -<os>-<arch> suffix) and `rdmaSharedDevicePlugin.version`. Without one
the objects keep the tag and a real run is refused, as before."""

from __future__ import annotations

import hashlib

import pulumi
import pytest
from kubernetes_lock import with_image_digests
from kubernetes_objects import EXPECTATIONS, IB, MIG_SPOT, build
from kubernetes_schemas import validate

from components import runtime
from components.kubernetes import refuse_unpinned
from gpufleet.lock import load_lock

PINS = load_lock().kubernetes_components
VERSION = load_lock().profiles["cuda12.8-r580"].driver  # the AKS stacks' driver, which the pinned tag follows
DRIVER_TAG = f"nvcr.io/nvidia/driver:{VERSION}-ubuntu24.04"


def sample_digest(label: str) -> str:
    """A digest for tests only: the sha256 of a label, standing for what `lock resolve` reads from a registry."""
    return f"sha256:{hashlib.sha256(label.encode()).hexdigest()}"


DRIVER = sample_digest(f"driver {VERSION}-ubuntu24.04")
DOCA = sample_digest("doca-driver doca3.2.0-25.10-1.2.8.0-2-ubuntu24.04-amd64")
PLUGIN = sample_digest("k8s-rdma-shared-dev-plugin network-operator-v25.10.0")
ALL = {("gpu_operator", "driver"): DRIVER, ("network_operator", "doca-driver"): DOCA,
       ("network_operator", "k8s-rdma-shared-dev-plugin"): PLUGIN}


def refusal(minor: str = "1.35") -> str:
    with pytest.raises(pulumi.RunError) as refused:
        refuse_unpinned("azure", minor, "eastus", (IB,), VERSION, EXPECTATIONS)
    return str(refused.value)


def test_the_pinned_lock_is_the_shipped_one_for_these_images():
    """The tags these tests pin digests for are the shipped lock's, still by tag only (else the tests below would
    prove nothing about the change from tag to digest)."""
    assert PINS.gpu_operator.images["driver"].image == DRIVER_TAG
    assert all(getattr(PINS, component).images[key].digest is None for component, key in ALL)


def test_a_pinned_driver_digest_is_the_nvidia_driver_version_on_every_group(monkeypatch):
    with_image_digests(monkeypatch, {("gpu_operator", "driver"): DRIVER})
    plan = build((IB, MIG_SPOT), cloud="azure", region="eastus")
    for group in (IB, MIG_SPOT):
        spec = plan.one("NVIDIADriver", group.name).inputs["spec"]
        # the operator pulls nvcr.io/nvidia/driver@<digest>: the pinned tag's manifest, no -ubuntu24.04 appended
        assert (spec["repository"], spec["image"], spec["version"]) == ("nvcr.io/nvidia", "driver", DRIVER)
        assert spec["usePrecompiled"] is False  # the operator refuses a digest with precompiled drivers
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    message = refusal()
    assert DRIVER_TAG not in message
    assert "gpufleet-nodecheck:unpublished" in message  # the other unpinned images are still refused


def test_a_driver_digest_for_another_node_os_is_not_written_and_the_refusal_stays(monkeypatch):
    """Kubernetes 1.34 nodes run Ubuntu 22.04: the lock's digest is the 24.04 tag's, so the driver keeps the version
    form (the operator builds the 22.04 tag) and a real run is refused naming the tag to pin."""
    with_image_digests(monkeypatch, {("gpu_operator", "driver"): DRIVER})
    spec = build((IB,), cloud="azure", region="eastus", version="1.34").one("NVIDIADriver", IB.name).inputs["spec"]
    assert spec["version"] == VERSION
    other = build((IB,), cloud="azure", region="eastus", driver="570.133.20").one("NVIDIADriver", IB.name)
    assert other.inputs["spec"]["version"] == "570.133.20"
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    assert f"nvcr.io/nvidia/driver:{VERSION}-ubuntu22.04: the lock pins" in refusal("1.34")


def test_pinned_doca_and_plugin_digests_are_the_nic_policy_versions(monkeypatch):
    with_image_digests(monkeypatch, ALL)
    spec = build((IB,), cloud="azure", region="eastus").one("NicClusterPolicy", "nic-cluster-policy").inputs["spec"]
    doca, plugin = spec["ofedDriver"], spec["rdmaSharedDevicePlugin"]
    # the operator pulls <repository>/<image>@<version>, with no -<os><ver>-<arch> appended to a digest
    assert (doca["repository"], doca["image"], doca["version"]) == ("nvcr.io/nvidia/mellanox", "doca-driver", DOCA)
    assert doca["forcePrecompiled"] is False
    assert (plugin["repository"], plugin["image"], plugin["version"]) == \
        ("nvcr.io/nvidia/mellanox", "k8s-rdma-shared-dev-plugin", PLUGIN)
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    message = refusal()
    assert "doca-driver" not in message and "k8s-rdma-shared-dev-plugin" not in message and DRIVER_TAG not in message


def test_a_doca_digest_for_another_node_os_keeps_the_tag_and_the_refusal(monkeypatch):
    with_image_digests(monkeypatch, ALL)
    doca = build((IB,), cloud="azure", region="eastus", version="1.34").one(
        "NicClusterPolicy", "nic-cluster-policy").inputs["spec"]["ofedDriver"]
    assert doca["version"] == PINS.network_operator.images["doca-driver"].image.rpartition(":")[2]
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    assert "nodes of this Kubernetes version run ubuntu22.04; pin the doca-driver tag" in refusal("1.34")


def test_without_digests_the_objects_keep_the_tags():
    plan = build((IB,), cloud="azure", region="eastus")
    assert plan.one("NVIDIADriver", IB.name).inputs["spec"]["version"] == VERSION
    spec = plan.one("NicClusterPolicy", "nic-cluster-policy").inputs["spec"]
    assert spec["ofedDriver"]["version"] == "doca3.2.0-25.10-1.2.8.0-2"
    assert spec["rdmaSharedDevicePlugin"]["version"] == "network-operator-v25.10.0"


def test_the_objects_with_digests_validate_against_their_crds(monkeypatch):
    with_image_digests(monkeypatch, ALL)
    objects = build((IB, MIG_SPOT), cloud="azure", region="eastus").objects()
    crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    custom = [o for o in objects if o["kind"] in ("NVIDIADriver", "NicClusterPolicy")]
    assert len(custom) == 3
    for obj in custom:
        validate(obj, "1.35", crds)
