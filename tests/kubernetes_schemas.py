"""Validate Kubernetes objects as the API server of a given version would: built-in kinds strictly against the
official schemas (kubernetes-validate), custom resources against their CRD's openAPIV3Schema (jsonschema)."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from typing import Any

import jsonschema
import kubernetes_validate

from gpufleet.lock import load_lock

Obj = dict[str, Any]
# kubernetes_validate.validate parses the kind's schema and the version's _definitions.json (megabytes) from its
# package files on every call (kubernetes_validate/utils.py, schema_contents): read each file once per process. The
# validator reads them and never changes them, so every call still validates against the files as shipped.
kubernetes_validate.utils.schema_contents = functools.cache(kubernetes_validate.utils.schema_contents)


def plan_versions() -> list[str]:
    """The Kubernetes minors a plan can target (the autoscaler is pinned per minor) that kubernetes-validate knows."""
    pins = load_lock().kubernetes_components
    assert pins is not None
    known = {".".join(v.split(".")[:2]) for v in kubernetes_validate.utils.all_versions()}
    return sorted(set(pins.cluster_autoscaler.images) & known)


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


class UnknownField(ValueError):
    """A field the CRD's schema does not declare: the API server prunes it (`kubectl --validate=strict` refuses)."""


def unknown_fields(value: Any, schema: Obj, path: str = "") -> list[str]:
    """Paths in `value` that a structural schema neither declares nor keeps (x-kubernetes-preserve-unknown-fields)."""
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return []
    found: list[str] = []
    if isinstance(value, dict) and "properties" in schema:
        for key, item in value.items():
            if key not in schema["properties"]:
                found.append(f"{path}.{key}")
            else:
                found += unknown_fields(item, schema["properties"][key], f"{path}.{key}")
    elif isinstance(value, dict) and isinstance(schema.get("additionalProperties"), dict):
        for key, item in value.items():
            found += unknown_fields(item, schema["additionalProperties"], f"{path}.{key}")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            found += unknown_fields(item, schema["items"], f"{path}[{index}]")
    return found


def validate(obj: Obj, version: str, crds: Iterable[Obj] = ()) -> None:
    """Raise when the API server of `version` would refuse `obj`, or drop a field of it: built-in kinds strictly
    against the official schema; custom resources against their CRD's schema, undeclared fields refused."""
    schema = crd_schema(list(crds), obj["apiVersion"], obj["kind"])
    if schema is None:
        kubernetes_validate.validate(obj, version, strict=True)
        return
    error = jsonschema.exceptions.best_match(_crd_validator(json.dumps(schema, sort_keys=True)).iter_errors(obj))
    if error is not None:
        raise error
    unknown = unknown_fields({k: v for k, v in obj.items() if k != "metadata"}, schema)
    if unknown:
        raise UnknownField(f"{obj['kind']} {obj['metadata']['name']}: {', '.join(unknown)} not in its CRD's schema")


@functools.cache
def _crd_validator(schema_text: str) -> jsonschema.protocols.Validator:
    """jsonschema.validate's validator for one CRD schema, its check against the metaschema (the bulk of a call on
    the operators' large CRDs) done once per schema instead of once per object; errors chosen by best_match, as
    jsonschema.validate chooses them."""
    schema = json.loads(schema_text)
    validator = jsonschema.validators.validator_for(schema)
    validator.check_schema(schema)
    return validator(schema)
