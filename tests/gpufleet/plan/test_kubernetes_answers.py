"""The offline engine's answers for the kubernetes provider's objects: the id the provider gives (namespace/name, or
name for a cluster-scoped kind) and the live object (inputs plus what the API server adds)."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from gpufleet.plan.engine import run_program
from gpufleet.plan.kubernetes_answers import answer


def test_ids_follow_the_providers_namespace_slash_name():
    assert answer("kubernetes:apps/v1:DaemonSet", "x", {"metadata": {"name": "p", "namespace": "n"}})[0] == "n/p"
    assert answer("kubernetes:core/v1:Namespace", "y", {"metadata": {"name": "n"}})[0] == "n"
    assert answer("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "r", {"metadata": {"name": "r"}})[0] == "r"
    # A namespaced object naming no namespace lands in the provider's default one.
    assert answer("kubernetes:core/v1:ConfigMap", "z", {"metadata": {"name": "c"}})[0] == "default/c"


def test_the_live_object_carries_the_servers_metadata_and_is_stable():
    inputs = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}, "data": {"a": "b"}}
    _, live = answer("kubernetes:core/v1:ConfigMap", "cm", inputs)
    assert live["data"] == {"a": "b"} and live["metadata"]["name"] == "c"
    assert {"uid", "resourceVersion", "creationTimestamp"} <= set(live["metadata"])
    assert answer("kubernetes:core/v1:ConfigMap", "cm", inputs) == ("n/c", live)
    _, cluster_scoped = answer("kubernetes:core/v1:Namespace", "ns", {"metadata": {"name": "n"}})
    assert "namespace" not in cluster_scoped["metadata"]


def test_a_program_reads_an_objects_uid_through_the_engine():
    seen: list[str] = []

    def program() -> None:
        opts = pulumi.ResourceOptions(provider=k8s.Provider("kube", kubeconfig="{}"))
        namespace = k8s.core.v1.Namespace("ns", metadata={"name": "jobs"}, opts=opts)
        k8s.core.v1.ConfigMap("cm", metadata={"name": "c", "namespace": namespace.metadata["name"],
                                              "labels": {"ns-uid": namespace.metadata["uid"]}}, opts=opts)
        namespace.metadata["uid"].apply(seen.append)

    recorded = run_program(program, {}, project="gpufleet", stack="test", region="us-east-1", zones=[])
    config_map = next(r for r in recorded if r.type == "kubernetes:core/v1:ConfigMap")
    assert config_map.inputs["metadata"]["namespace"] == "jobs"
    assert config_map.inputs["metadata"]["labels"]["ns-uid"] == seen[0]
    namespace_urn = next(r.urn for r in recorded if r.type == "kubernetes:core/v1:Namespace")
    assert config_map.property_dependencies["metadata"] == (namespace_urn,)
