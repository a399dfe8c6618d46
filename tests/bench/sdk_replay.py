"""The Pulumi SDK alone registering the resources of recorded plans: what it spends before any gpufleet code.

Usage: python sdk_replay.py PLAN.json [PLAN.json ...] -> JSON list: per plan, the best CPU seconds of a few
runs (after one run that loads and warms the SDK). `python sdk_replay.py --once PLAN.json` registers the plan
once and prints nothing: timed as a whole process (tests/bench/test_plan_speed.py), it is the floor of a plan, the
imports of the provider modules its resources come from included; `--imports-only PLAN.json` only imports them.
Each run registers every resource of the plan under the SDK's MockMonitor with mocks that answer with the inputs,
through the provider package's own resource class (pulumi_aws.cloudwatch.MetricAlarm for
aws:cloudwatch/metricAlarm:MetricAlarm): the same types, names, parents, protect and ignore_changes, the same input
values, every input the plan records as wired to other resources passed as an output of theirs (so the SDK awaits
and tracks it as in the program), explicit depends_on for the rest. The project's own component types are registered
as a ComponentResource subclass, as components are. Nothing of gpufleet is imported.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import importlib
import importlib.util
import json
import re
import sys
import time
import types
from pathlib import Path
from typing import Any

import pulumi
import pulumi.dynamic
from pulumi._types import input_type_py_to_pulumi_names
from pulumi.runtime import mocks, settings
from pulumi.runtime.stack import run_pulumi_func

COMPONENT_PACKAGE = "gpufleet"  # the project's component types: gpufleet:<cloud>:<Component>
# Type token package -> Python package of its provider SDK; a token is <package>:<module>[/<resource>]:<Class>
# and `index` is the package itself (the layout the Pulumi code generator gives every provider package).
PROVIDER_PACKAGES = {"aws": "pulumi_aws", "azure-native": "pulumi_azure_native", "alicloud": "pulumi_alicloud",
                     "time": "pulumiverse_time", "kubernetes": "pulumi_kubernetes"}
ROUNDS = 5
# A dynamic resource's provider is the program's own code; the SDK serializes whichever it is given.
DYNAMIC_PROVIDER = pulumi.dynamic.ResourceProvider()


class Component(pulumi.ComponentResource):
    """A component as the project's are: a subclass, so the SDK records the same kind of source position."""

    def __init__(self, type_: str, name: str, opts: pulumi.ResourceOptions) -> None:
        super().__init__(type_, name, None, opts)


@functools.cache
def resource_class(type_: str) -> tuple[type[pulumi.CustomResource], dict[str, str]]:
    """The provider SDK's class of a type token, and its inputs' Pulumi names -> Python keyword names: a
    Kubernetes kind from the SDK's group and version module (`apps/v1`, `rbac.authorization.k8s.io/v1`), an operator's
    kind as a CustomResource, a provider as its package's Provider."""
    package, module, name = type_.split(":")
    if package == "pulumi" and module == "providers":
        found = importlib.import_module(PROVIDER_PACKAGES[name])
        cls, args = found.Provider, found.ProviderArgs
    else:
        found = importlib.import_module(PROVIDER_PACKAGES[package])
        if package == "kubernetes":
            group, version = module.split("/")
            if importlib.util.find_spec(f"{found.__name__}.{group.split('.')[0]}") is None:  # an operator's kind
                cls = importlib.import_module(f"{found.__name__}.apiextensions").CustomResource
                return cls, {"apiVersion": "api_version", "kind": "kind", "metadata": "metadata"}
            found = importlib.import_module(f"{found.__name__}.{group.split('.')[0]}.{version}")
        elif module.split("/")[0] != "index":
            found = importlib.import_module(f"{found.__name__}.{module.split('/')[0]}")
        cls = getattr(found, name)
        args = getattr(found, f"{name}InitArgs", None) or getattr(found, f"{name}Args")
    # An input named as a constructor parameter takes a trailing underscore there (azure-native's resourceName).
    names = {pulumi_name: py_name + "_" if py_name in ("resource_name", "opts") else py_name
             for py_name, pulumi_name in input_type_py_to_pulumi_names(args).items()}
    return cls, names


@functools.cache
def dynamic_class(type_: str) -> type[pulumi.dynamic.Resource]:
    """A Python dynamic resource of the same type token (pulumi-python:dynamic/<module>:<Name>)."""
    module, name = type_.removeprefix("pulumi-python:dynamic").lstrip("/").split(":")
    return types.new_class(name, (pulumi.dynamic.Resource,), {"module": module, "name": name})


def construct(cls: type[pulumi.CustomResource], name: str, opts: pulumi.ResourceOptions,
              kwargs: dict[str, Any]) -> pulumi.CustomResource:
    """The resource as the program registers it: a required input the plan records no value for (unknown until
    the deploy, e.g. an unread base image) goes in as an output of None, as the program passes it."""
    while True:
        try:
            return cls(name, opts=opts, **kwargs)
        except TypeError as error:
            missing = re.fullmatch(r"Missing required property '(\w+)'", str(error))
            if missing is None or missing[1] in kwargs:
                raise
            kwargs = {**kwargs, missing[1]: pulumi.Output.from_input(None)}


class Echo(pulumi.runtime.Mocks):
    """Answers with the inputs as outputs; azure-native's `identity.userAssignedIdentities` input lists identity ids
    where its output maps them, so the answer maps them (as the offline engine's answers do)."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        outputs = dict(args.inputs)
        identity = outputs.get("identity")
        if isinstance(identity, dict) and isinstance(identity.get("userAssignedIdentities"), list):
            outputs["identity"] = {**identity, "userAssignedIdentities": dict.fromkeys(
                identity["userAssignedIdentities"], {})}
        return f"{args.name}-id", outputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        return {}


def _wired(resource: dict[str, Any]) -> set[str]:
    return {urn for urns in resource["property_dependencies"].values() for urn in urns}


def in_order(resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Parents and dependencies before the resources that name them (the plan lists resources by URN)."""
    by_urn = {resource["urn"]: resource for resource in resources}
    seen: set[str] = set()
    ordered: list[dict[str, Any]] = []

    def visit(resource: dict[str, Any]) -> None:
        if resource["urn"] in seen:
            return
        seen.add(resource["urn"])
        for urn in sorted({resource["parent"], *resource["depends_on"], *_wired(resource)} & by_urn.keys()):
            visit(by_urn[urn])
        ordered.append(resource)

    for resource in resources:
        visit(resource)
    return ordered


def register(resources: list[dict[str, Any]]) -> None:
    made: dict[str, pulumi.Resource] = {}
    for resource in resources:
        wired = _wired(resource)
        opts = pulumi.ResourceOptions(
            parent=made.get(resource["parent"] or ""),
            depends_on=[made[urn] for urn in resource["depends_on"] if urn not in wired and urn in made],
            protect=resource["protect"],
            ignore_changes=resource["ignore_changes"] or None,
        )
        if resource["type"].split(":")[0] == COMPONENT_PACKAGE:
            made[resource["urn"]] = Component(resource["type"], resource["name"], opts)
            continue
        inputs = {}
        for key, value in resource["inputs"].items():
            sources = [made[urn] for urn in resource["property_dependencies"].get(key, []) if urn in made]
            inputs[key] = (pulumi.Output.all(*[source.urn for source in sources]).apply(lambda _, v=value: v)
                           if sources else value)
        if resource["type"].startswith("pulumi-python:dynamic"):  # the SDK adds the serialized provider itself
            props = {key: value for key, value in inputs.items() if key != "__provider"}
            made[resource["urn"]] = dynamic_class(resource["type"])(DYNAMIC_PROVIDER, resource["name"], props, opts)
            continue
        cls, names = resource_class(resource["type"])
        kwargs = {names.get(key, key): value for key, value in inputs.items()}  # a custom resource's spec as is
        made[resource["urn"]] = construct(cls, resource["name"], opts, kwargs)


def run(resources: list[dict[str, Any]]) -> float:
    """CPU seconds of one run, on a fresh loop and root stack (as the offline engine starts each plan)."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    settings.ROOT.set(None)
    settings.SETTINGS.outputs.clear()
    mocks.set_mocks(Echo(), project="gpufleet", stack="bench", preview=False)
    start = time.process_time()
    loop.run_until_complete(run_pulumi_func(lambda: register(resources)))
    spent = time.process_time() - start
    loop.close()
    return spent


def main(paths: list[str]) -> None:
    plans = [in_order(json.loads(Path(path).read_text())["resources"]) for path in paths]
    gc.disable()  # as a gpufleet command runs (gpufleet/collector.py)
    run(plans[0])
    spent: list[list[float]] = [[] for _ in plans]
    for _ in range(ROUNDS):  # interleaved, as bench_tools.best_of times processes
        for index, plan in enumerate(plans):
            spent[index].append(run(plan))
    print(json.dumps([min(times) for times in spent]))


def imports_only(resources: list[dict[str, Any]]) -> None:
    """The import floor: the provider classes of the plan's types loaded and the SDK's runtime started, nothing
    registered but the root stack."""
    for resource in resources:
        if resource["type"].split(":")[0] != COMPONENT_PACKAGE and not resource["type"].startswith("pulumi-python"):
            resource_class(resource["type"])
    run([])


if __name__ == "__main__":
    modes = {"--once": lambda resources: run(in_order(resources)), "--imports-only": imports_only}
    if sys.argv[1:2] and sys.argv[1] in modes:
        modes[sys.argv[1]](json.loads(Path(sys.argv[2]).read_text())["resources"])
    else:
        main(sys.argv[1:])
