"""The inputs the installed provider SDKs declare per resource type, and the inputs a plan registers beyond them
(tests/components/clouds/test_provider_inputs.py checks every shipped plan; component tests check variants)."""

from __future__ import annotations

import importlib

from pulumi._types import _py_properties

from gpufleet.plan.planner import PlanResult

# Type-token package -> the Python SDK package that declares it.
SDKS = {"aws": "pulumi_aws", "azure-native": "pulumi_azure_native", "alicloud": "pulumi_alicloud",
        "time": "pulumiverse_time", "kubernetes": "pulumi_kubernetes"}
# Types with no provider schema: gpufleet's own components and Python dynamic resources (their inputs are the
# provider's own arguments).
NO_SCHEMA = ("gpufleet:", "pulumi-python:dynamic", "pulumi:providers:")


def declared_inputs(token: str) -> set[str]:
    """The camelCase input names the SDK's Args class declares for a type token `pkg:module[/x]:Name`."""
    package, module, name = token.split(":")
    sdk = importlib.import_module(SDKS[package])
    if package == "kubernetes":  # `apps/v1`, `rbac.authorization.k8s.io/v1`: the SDK's group module, then version
        group, version = module.split("/")
        return {camel for _, camel, _ in _py_properties(getattr(getattr(getattr(sdk, group.split(".")[0]), version),
                                                                f"{name}Args"))}
    namespace = sdk if module.split("/")[0] == "index" else getattr(sdk, module.split("/")[0])
    # Where a nested input type has the resource's name (azure-native's network.SubnetArgs), the SDK calls the
    # resource's own arguments NAMEInitArgs.
    args = getattr(namespace, f"{name}InitArgs", None) or getattr(namespace, f"{name}Args")
    return {camel for _, camel, _ in _py_properties(args)}


def is_custom_resource(token: str) -> bool:
    """A Kubernetes custom resource (an operator's CRD kind): pulumi_kubernetes has no Args for it; its inputs are
    checked against the CRD's schema (tests/kubernetes_schemas.py)."""
    if not token.startswith("kubernetes:"):
        return False
    group = token.split(":")[1].split("/")[0].split(".")[0]
    return not hasattr(importlib.import_module(SDKS["kubernetes"]), group)


def unknown_inputs(plan: PlanResult) -> list[tuple[str, str]]:
    found = []
    for resource in plan.resources:
        if resource.type.startswith(NO_SCHEMA) or is_custom_resource(resource.type):
            continue
        known = declared_inputs(resource.type)
        found += [(resource.type, key) for key in resource.inputs if key not in known and not key.startswith("__")]
    return found
