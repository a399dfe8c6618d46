"""Spot drain on EKS: the node termination handler in IMDS mode on spot nodes only, from its pinned release, its
objects valid for every supported Kubernetes version, refused on a real run while its digest is unknown."""

from __future__ import annotations

from dataclasses import replace

import pulumi
import pytest
from kubernetes_objects import EFA, SHARED, build
from kubernetes_schemas import plan_versions, validate

from components import runtime
from components.kubernetes import refuse_unpinned
from components.kubernetes.manifests import containers, pod_spec, read_manifest
from gpufleet.lock import load_lock

NAME = "aws-node-termination-handler"
SPOT = replace(SHARED, spot=True)
PINS = load_lock().kubernetes_components


def handler(plan) -> dict:
    return plan.one("DaemonSet", NAME).inputs


def test_no_spot_group_no_handler() -> None:
    plan = build((EFA, SHARED))
    assert not [r for r in plan.kubernetes if NAME in r.inputs["metadata"]["name"]]


def test_a_spot_group_gets_the_handler_in_imds_mode_on_spot_nodes_only() -> None:
    plan = build((EFA, SPOT))
    spec = pod_spec(handler(plan))
    (term,) = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [
        {"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": ["fargate"]},
        {"key": "node.kubernetes.io/lifecycle", "operator": "In", "values": ["spot"]},
    ]
    (container,) = containers(handler(plan))
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["ENABLE_SQS_TERMINATION_DRAINING"] == "false"  # IMDS mode: the node's own metadata, no queue
    assert env["ENABLE_SPOT_INTERRUPTION_DRAINING"] == "true"
    assert env["ENABLE_REBALANCE_MONITORING"] == env["ENABLE_REBALANCE_DRAINING"] == "true"
    assert env["CORDON_ONLY"] == "false" and env["IGNORE_DAEMON_SETS"] == "true"
    assert container["image"] == PINS.node_termination_handler.images[NAME].reference
    assert spec["hostNetwork"] is True and spec["serviceAccountName"] == NAME
    assert not container["securityContext"].get("privileged")
    assert {(o["kind"], o["metadata"]["name"]) for o in plan.objects() if NAME in o["metadata"]["name"]} == {
        ("ServiceAccount", NAME), ("ClusterRole", NAME), ("ClusterRoleBinding", NAME), ("DaemonSet", NAME)}


def test_the_rendered_manifest_runs_the_image_the_lock_pins() -> None:
    rendered = {c["image"] for obj in read_manifest(NAME).objects if "template" in obj.get("spec", {})
                for c in containers(obj)}
    assert rendered == {pin.image for pin in PINS.node_termination_handler.images.values()}
    assert len(PINS.node_termination_handler.source.split("@")[1].split()[0]) == 40


@pytest.mark.parametrize("version", plan_versions())
def test_the_handlers_objects_validate_strictly(version: str) -> None:
    objects = [o for o in build((EFA, SPOT), version=version).objects() if NAME in o["metadata"]["name"]]
    assert len(objects) == 4
    for obj in objects:
        validate(obj, version)


def test_a_real_run_refuses_the_handler_while_its_digest_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    pin = PINS.node_termination_handler.images[NAME]
    assert pin.digest is None and pin.unconfirmed
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    with pytest.raises(pulumi.RunError, match=pin.image.replace(".", r"\.")):
        refuse_unpinned("aws", "1.35", "us-east-1", (EFA, SPOT))


def test_the_pack_passes_the_handler_and_names_its_tag_only_image() -> None:
    from gpufleet.plan.policy_runner import run_policies
    from policies.registry import RULES_BY_NAME

    plan = build((EFA, SPOT))
    rules = [RULES_BY_NAME[name].policy for name in RULES_BY_NAME if name.startswith("kubernetes-")]
    report = run_policies(plan.resources, {}, rules)
    urn = plan.urn_of("DaemonSet", NAME)
    assert [v.policy for v in report.violations if v.urn == urn and v.level == "mandatory"] == []
    assert ("kubernetes-image-digest-unconfirmed", urn) in {(v.policy, v.urn) for v in report.violations}
