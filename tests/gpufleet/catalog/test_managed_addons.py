"""gpufleet/catalog/eks_addons.yaml and ack_addons.yaml: every add-on of every minor, a version in the cloud's form
with its source or null with how to read it, and the refusal that names what a real run lacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.catalog.kubernetes_versions import load_kubernetes_versions
from gpufleet.catalog.managed_addons import ACK_FILE, EKS_FILE, AckAddons, load_ack_addons, load_eks_addons
from gpufleet.stackfile import SpecInvalid


def test_the_ack_file_covers_every_minor_ack_offers_and_eks_the_one_it_pins() -> None:
    # A minor outside its cloud's file is exit 2 at scheduler.version (stackfile/scheduler_checks.py).
    assert set(load_kubernetes_versions().offered("alicloud")) <= set(load_ack_addons().kubernetes)
    assert "1.35" in load_eks_addons().kubernetes
    for catalog in (load_ack_addons(), load_eks_addons()):
        for minor in catalog.kubernetes:
            assert list(catalog.for_minor(minor)) == list(type(catalog).NAMES)


def test_the_unpinned_message_names_the_file_minor_and_each_missing_addon_with_how_to_read_it() -> None:
    catalog = AckAddons(kubernetes={"1.36": {
        name: ({"version": "v1.2.3", "source": "a test"} if name == "terway-eniip"
               else {"version": None, "unconfirmed": f"read {name}"}) for name in AckAddons.NAMES}})
    why = catalog.unpinned("1.36", ["terway-eniip", "ack-erdma-controller"])
    assert why is not None and why.startswith("gpufleet/catalog/ack_addons.yaml kubernetes.1.36: 1 add-on(s)")
    assert "ack-erdma-controller: read ack-erdma-controller" in why and "terway-eniip:" not in why
    assert catalog.unpinned("1.36", ["terway-eniip"]) is None
    with pytest.raises(KeyError, match="ack_addons.yaml has no add-on versions for Kubernetes 1.30"):
        catalog.unpinned("1.30", ["terway-eniip"])


@pytest.mark.parametrize(("path", "load", "old", "new", "words"), [
    (EKS_FILE, load_eks_addons, "version: v1.14.2-eksbuild.4", "version: 1.14.2", "does not match"),
    (ACK_FILE, load_ack_addons, "    terway-eniip: *listaddons\n", "", "list exactly"),
    (ACK_FILE, load_ack_addons, "      version: null\n      unconfirmed: \"read it with ListAddons for the "
     "cluster's region and version (see the top of this file)\"\n", "      version: null\n", "say in `unconfirmed`"),
])
def test_a_malformed_file_is_refused_naming_why(tmp_path: Path, path: Path, load: object, old: str, new: str,
                                                 words: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    copy = tmp_path / path.name
    copy.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(SpecInvalid) as invalid:
        load.__wrapped__(copy)  # type: ignore[attr-defined]  # past the cache of the shipped file
    assert words in str(invalid.value.errors)
