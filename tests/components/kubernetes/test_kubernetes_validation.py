"""Every Kubernetes object the in-cluster component registers is one the API server of each supported version
accepts: built-in kinds strictly against the official schemas, custom resources against their CRD."""

from __future__ import annotations

import copy

import jsonschema
import kubernetes_validate
import pytest
from kubernetes_objects import CGPU, EFA, ERDMA, IB, MIG_SPOT, PLAIN_P5, SHARED, build
from kubernetes_schemas import UnknownField, plan_versions, validate

VERSIONS = plan_versions()


def test_the_plan_targets_are_known_to_the_validator():
    assert {"1.34", "1.35", "1.36"} <= set(VERSIONS)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_registered_object_validates_on_aws(version):
    plan = build((EFA, SHARED, PLAIN_P5), version=version)
    objects = plan.objects()
    crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    assert len(objects) > 30 and crds
    for obj in objects:
        validate(obj, version, crds)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_registered_object_validates_on_azure(version):
    """AKS: the operators' ClusterPolicy, NVIDIADrivers and NicClusterPolicy and NFD's NodeFeatureRule against their
    CRDs, the rest strictly."""
    objects = build((IB, MIG_SPOT), cloud="azure", region="eastus", version=version).objects()
    crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    custom = [o for o in objects if o["apiVersion"].split("/")[0] in ("nvidia.com", "mellanox.com", "nfd.k8s-sigs.io")]
    assert {o["kind"] for o in custom} == {"ClusterPolicy", "NVIDIADriver", "NicClusterPolicy", "NodeFeatureRule"}
    for obj in objects:
        validate(obj, version, crds)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_registered_object_validates_on_alicloud(version):
    objects = build((ERDMA, CGPU), cloud="alicloud", region="cn-beijing", version=version).objects()
    assert {o["kind"] for o in objects} >= {"DaemonSet", "ConfigMap", "ClusterRole"}
    for obj in objects:
        validate(obj, version)


def test_a_cluster_policy_field_the_crd_lacks_fails():
    objects = build((IB,), cloud="azure", region="eastus").objects()
    crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    policy = copy.deepcopy(next(o for o in objects if o["kind"] == "ClusterPolicy"))
    policy["spec"]["driver"]["rdmaa"] = {"enabled": True}
    with pytest.raises(UnknownField, match=r"\.spec\.driver\.rdmaa"):
        validate(policy, VERSIONS[0], crds)


def test_an_object_the_server_would_refuse_fails():
    obj = copy.deepcopy(build((EFA,)).one("DaemonSet", "aws-efa-k8s-device-plugin").inputs)
    obj["spec"]["template"]["spec"]["containers"][0]["securityContext"]["privilegd"] = True
    with pytest.raises(kubernetes_validate.ValidationError, match="'privilegd' was unexpected"):
        validate(obj, VERSIONS[0])


def test_a_custom_resource_is_checked_against_its_crd():
    plan = build((EFA,))
    crds = [o for o in plan.objects() if o["kind"] == "CustomResourceDefinition"]
    rule = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule", "metadata": {"name": "gpu"},
            "spec": {"rules": [{"name": "nvidia", "labels": {"example.com/gpu": "true"},
                                "matchFeatures": [{"feature": "pci.device", "matchExpressions": {
                                    "vendor": {"op": "In", "value": ["10de"]}}}]}]}}
    validate(rule, VERSIONS[0], crds)
    rule["spec"]["rules"][0]["labels"] = "not a map"
    with pytest.raises(jsonschema.ValidationError, match="is not of type 'object'"):
        validate(rule, VERSIONS[0], crds)
