"""The rendered upstream manifests (manifests/*.yaml) and the loader that turns an object into its typed resource.

Each manifest file starts with a header naming the repository, commit and sha256 of every source file it was
rendered from; `read_manifest` refuses a file without one. `register` creates the pulumi_kubernetes class of the
object's apiVersion and kind (`apps/v1` DaemonSet -> pulumi_kubernetes.apps.v1.DaemonSet), its top-level fields
as the class's arguments and everything below them as the manifest writes it (the SDK passes nested camelCase
keys through unchanged), so every object shows in a plan with its inputs, as `kubectl apply` would send it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes
import yaml

from gpufleet import derived_cache
from gpufleet.yaml_libyaml import SAFE_LOADER

MANIFESTS = Path(__file__).resolve().parent / "manifests"
HEADER = re.compile(r"^# source-(repository|commit|file): (\S+)(?: (.*))?$")
# Fields of a manifest that are no inputs: the server writes them.
SERVER_FIELDS = ("status",)
# The label every chart renders with its release tool; these objects are managed by the Pulumi program instead.
MANAGED_BY = "app.kubernetes.io/managed-by"

Obj = dict[str, Any]


@dataclass(frozen=True)
class Manifest:
    """One rendered file: where it came from and its objects (fresh copies on every read)."""

    repository: str
    commit: str
    files: tuple[tuple[str, str], ...]
    objects: tuple[Obj, ...]

    def fresh(self) -> list[Obj]:
        """Deep copies of the objects, for a builder to change."""
        return [_tree_copy(obj) for obj in self.objects]


def _tree_copy(value: Any) -> Any:
    """A copy of parsed YAML's maps and lists, sharing its immutable leaves: a third of copy.deepcopy's time, which
    keeps a memo of every node (a Kubernetes cluster's plan copies thousands of manifest nodes)."""
    if type(value) is dict:
        return {key: _tree_copy(item) for key, item in value.items()}
    if type(value) is list:
        return [_tree_copy(item) for item in value]
    return value


@cache
def read_manifest(name: str) -> Manifest:
    """manifests/<name>.yaml with its source header checked (repository, 40-hex commit, sha256 per source file)."""
    path = MANIFESTS / f"{name}.yaml"
    text = path.read_text()
    repository = commit = None
    files: list[tuple[str, str]] = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        found = HEADER.match(line)
        if not found:
            continue
        key, value, rest = found.groups()
        if key == "repository":
            repository = value
        elif key == "commit":
            commit = value
        else:
            files.append((value, rest or ""))
    if not repository or not commit or not re.fullmatch(r"[0-9a-f]{40}", commit):
        raise ValueError(f"{path.name}: the header names no source repository and 40-hex commit")
    if not files or not all(re.fullmatch(r"sha256:[0-9a-f]{64}", digest) for _, digest in files):
        raise ValueError(f"{path.name}: every source-file line names the file's sha256")
    return Manifest(repository, commit, tuple(files), derived_cache.kept("manifest-objects", text.encode(),
                                                                          lambda: _objects(text)))


def _objects(text: str) -> tuple[Obj, ...]:
    """The documents of a manifest, nulls stripped. Parsing is most of what a Kubernetes plan spends beyond the SDK
    (libyaml and PyYAML's constructors: 0.1-0.2 s for the operators' CRDs, 40-90 ms per file), so it is kept per
    content (derived_cache; unpickled in ~1 ms); the pure reader was ~0.4 s of an EKS plan."""
    return tuple(strip_nulls(doc) for doc in yaml.load_all(text, Loader=SAFE_LOADER) if doc)


def strip_nulls(value: Any) -> Any:
    """The value without null map entries: a template's empty `value:` renders null, which the API server reads as
    absent (and the provider would send as null)."""
    if isinstance(value, dict):
        return {key: strip_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [strip_nulls(item) for item in value]
    return value


def find(objects: list[Obj], kind: str, name: str) -> Obj:
    """The one object of `kind` named `name` (KeyError naming both when there is none)."""
    for obj in objects:
        if obj["kind"] == kind and obj["metadata"]["name"] == name:
            return obj
    raise KeyError(f"no {kind} {name!r} in the manifest")


def pod_spec(obj: Obj) -> Obj:
    """The pod template's spec of a workload (DaemonSet, Deployment...)."""
    return obj["spec"]["template"]["spec"]


def containers(obj: Obj) -> list[Obj]:
    """Every container of a workload's pod template, init containers included."""
    spec = pod_spec(obj)
    return [*spec.get("initContainers", []), *spec.get("containers", [])]


def _class_of(api_version: str, kind: str) -> type[pulumi.CustomResource]:
    """pulumi_kubernetes.<group's first label, `core` for the core group>.<version>.<kind>."""
    group, _, version = api_version.rpartition("/")
    package = getattr(pulumi_kubernetes, group.split(".")[0] if group else "core", None)
    found = getattr(getattr(package, version, None), kind, None)
    if found is None:
        raise LookupError(f"pulumi_kubernetes has no class for {api_version} {kind}")
    return found


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def resource_name(prefix: str, obj: Obj) -> str:
    """The Pulumi name of an object: the component's prefix, the namespace (if any) and the object's name."""
    meta = obj["metadata"]
    return "-".join(part for part in (prefix, meta.get("namespace"), meta["name"]) if part)


def is_custom(obj: Obj) -> bool:
    """A custom resource: a kind pulumi_kubernetes has no class for (its CRD is among the objects created first)."""
    try:
        _class_of(obj["apiVersion"], obj["kind"])
    except LookupError:
        return "." in obj["apiVersion"].partition("/")[0]
    return False


def register(prefix: str, obj: Obj, opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """Create the typed resource for a manifest object (its Pulumi name from `resource_name`); a custom resource as
    apiextensions.CustomResource, typed `kubernetes:<apiVersion>:<kind>` all the same."""
    if is_custom(obj):
        extra = {key: value for key, value in obj.items() if key not in ("apiVersion", "kind", "metadata")}
        return pulumi_kubernetes.apiextensions.CustomResource(
            resource_name(prefix, obj), api_version=obj["apiVersion"], kind=obj["kind"], metadata=obj["metadata"],
            opts=opts, **extra)
    cls = _class_of(obj["apiVersion"], obj["kind"])
    body = {key: value for key, value in obj.items() if key not in SERVER_FIELDS}
    labels = body.get("metadata", {}).get("labels")
    if labels and MANAGED_BY in labels:
        body["metadata"] = {**body["metadata"], "labels": {**labels, MANAGED_BY: "pulumi"}}
    # A top-level field the class does not take is a TypeError from its constructor: never silently dropped.
    kwargs = {_snake(key): value for key, value in body.items()}
    return cls(resource_name(prefix, obj), opts=opts, **kwargs)
