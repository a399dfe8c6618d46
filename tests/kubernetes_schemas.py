"""Validate Kubernetes objects as the API server of a given version would: built-in kinds strictly against the
official schemas (kubernetes-validate), custom resources against their CRD's openAPIV3Schema (jsonschema)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

from gpufleet.lock import load_lock

DATA = Path(__file__).resolve().parent / "data" / "crds"
Obj = dict[str, Any]


def plan_versions() -> list[str]:
    """The Kubernetes minors a plan can target (the autoscaler is pinned per minor) that kubernetes-validate knows."""
    pins = load_lock().kubernetes_components
    assert pins is not None
    known = {".".join(v.split(".")[:2]) for v in kubernetes_validate.utils.all_versions()}
    return sorted(set(pins.cluster_autoscaler.images) & known)


def load_crds(*names: str) -> list[Obj]:
    """CRDs vendored under tests/data/crds/ (each file's header names its source)."""
    found = []
    for name in names:
        found += [doc for doc in yaml.safe_load_all((DATA / name).read_text()) if doc]
    return found


def crd_schema(crds: Iterable[Obj], api_version: str, kind: str) -> Obj | None:
    """The openAPIV3Schema a CRD serves for `apiVersion` / `kind`, or None when no CRD defines it."""
    group, _, version = api_version.rpartition("/")
    for crd in crds:
        spec = crd["spec"]
        if spec["group"] == group and spec["names"]["kind"] == kind:
            for served in spec["versions"]:
                if served["name"] == version and served.get("served", True):
                    return served["schema"]["openAPIV3Schema"]
    return None


def validate(obj: Obj, version: str, crds: Iterable[Obj] = ()) -> None:
    """Raise when the API server of `version` would refuse `obj` (unknown fields included)."""
    schema = crd_schema(list(crds), obj["apiVersion"], obj["kind"])
    if schema is not None:
        jsonschema.validate(obj, schema)
        return
    kubernetes_validate.validate(obj, version, strict=True)
