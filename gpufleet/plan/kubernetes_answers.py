"""Answers the offline engine gives for the kubernetes provider's resources, on every cloud.

The provider creates the object and returns the live object as the resource's outputs, with the id
`<namespace>/<name>` (or `<name>` for a cluster-scoped kind): pulumi/pulumi-kubernetes
provider/pkg/provider/provider.go (Create: `id = fqObjName(initialized)`) and util.go (fqObjName), at
94977969d64112b04e19945818a7d5d5f38f631d. The API server adds what the program cannot know: metadata.uid,
resourceVersion and creationTimestamp, and the namespace of a namespaced object that names none (the provider's
default namespace, `default` unless the provider sets one). Answers derive from the type and name only, so two
plans of one stack are identical.
"""

from __future__ import annotations

from typing import Any

from ..clouds.mock_ids import guid

PREFIX = "kubernetes:"
# Kinds the API server keeps outside namespaces (`kubectl api-resources --namespaced=false`), among those a
# program creates; every other kind, custom resources included, is namespaced unless listed here.
CLUSTER_SCOPED = frozenset({
    "Namespace", "Node", "PersistentVolume", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
    "PriorityClass", "StorageClass", "CSIDriver", "RuntimeClass", "IngressClass", "APIService",
    "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding", "VolumeAttachment", "CertificateSigningRequest", "DeviceClass",
    # node-feature-discovery's cluster-scoped custom resources (its CRDs say `scope: Cluster`)
    "NodeFeatureRule",
})
# What the API server stamps on every object; a fixed instant so plans do not change with the clock.
CREATED = "2025-01-01T00:00:00Z"


def is_kubernetes(typ: str) -> bool:
    """True for the kubernetes provider's resource types (`kubernetes:apps/v1:DaemonSet`...)."""
    return typ.startswith(PREFIX)


def kind_of(typ: str) -> str:
    """The object kind of a kubernetes type token: `kubernetes:apps/v1:DaemonSet` -> DaemonSet."""
    return typ.rsplit(":", 1)[-1]


def answer(typ: str, name: str, inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The id and live object the provider returns for a created object (its inputs plus the server's fields)."""
    metadata = dict(inputs.get("metadata") or {})
    # The provider auto-names an object without metadata.name from the resource name plus a random suffix; a
    # stable suffix stands in for the random one.
    metadata.setdefault("name", f"{name}-{guid(typ + '::' + name)[:8]}")
    kind = kind_of(typ)
    if kind not in CLUSTER_SCOPED:
        metadata.setdefault("namespace", "default")
    metadata.update(
        uid=guid(f"{typ}::{name}"),
        resourceVersion="1",
        creationTimestamp=CREATED,
    )
    namespace = metadata.get("namespace")
    physical = f"{namespace}/{metadata['name']}" if namespace and kind not in CLUSTER_SCOPED else metadata["name"]
    return str(physical), {**inputs, "metadata": metadata}
