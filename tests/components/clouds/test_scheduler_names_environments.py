"""Two environments of one Kubernetes cluster share no name unique in a region or wider, on every cloud: every shipped
stack with a scheduler planned as dev and as prod asks for different names in every row of its cloud's names table
(clouds/C/names.py) scoped to a region, an account or subscription, a tenant, a region of every account or the whole
cloud, each row with the source that gives its scope. A name the cloud fixes from an id it assigns per cluster is the
one exception, named below with its source (offline, the mocks give both environments the same id)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from conftest import SHIPPED_STACKS, read_cluster, without_job_operators, write_stack
from test_depth import DEEP

from gpufleet.clouds.naming import WIDER_THAN_STACK, NameRule
from gpufleet.plan.planner import PlanResult, plan_stack

SCHEDULER_STACKS = sorted(
    path.name.removeprefix("Pulumi.").removesuffix(".yaml") for path in SHIPPED_STACKS.glob("Pulumi.*.yaml")
    if "scheduler:" in path.read_text(encoding="utf-8"))
# Every one at depth (make test-deep); before every commit the train stack of each cloud: each infer stack's names in
# a shared scope are rows its train twin has too (checked 2026-11-28), so the infer stacks re-prove those rows.
COMPARED_STACKS = SCHEDULER_STACKS if DEEP else [stack for stack in SCHEDULER_STACKS if "-train-" in stack]
# A resource group's names follow its own (a subscription row); the network's, a resource's own children's and display
# names cannot meet another stack's.
SHARED_SCOPES = WIDER_THAN_STACK | {"region"}
ACK = "alicloud:cs/managedKubernetes:ManagedKubernetes"
# Named by the cloud from the id it gives the cluster: the ACK eRDMA Controller add-on assumes the role
# `ack-erdma-controller-<cluster id>` (AliyunContainerService/ack-ram-tool @e34e255
# pkg/ctl/rrsa/setupaddon/addon/ack-erdma-controller.go:13, :22-24; components/clouds/alicloud/ack_rrsa.py). Two
# clusters never share an id, so dev and prod never share the name; the policy is named the same way.
FROM_CLUSTER_ID = {("alicloud:ram/role:Role", "roleName"), ("alicloud:ram/policy:Policy", "policyName")}
# What each cloud's Kubernetes plan must name, so the comparison cannot pass by finding nothing.
EXPECTED = {
    "alicloud": {ACK, "alicloud:log/project:Project", "alicloud:slb/acl:Acl", "alicloud:vpc/network:Network"},
    "aws": {"aws:eks/cluster:Cluster", "aws:kms/alias:Alias", "aws:cloudwatch/logGroup:LogGroup",
            "aws:autoscaling/group:Group"},
    "azure": {"azure-native:resources:ResourceGroup", "azure-native:keyvault:Vault"},
}


ROWS: dict[str, dict[tuple[str, str], NameRule]] = {
    cloud: importlib.import_module(f"gpufleet.clouds.{cloud}.names").NAMES.rules for cloud in EXPECTED}


def scoped(plan: PlanResult) -> dict[tuple[str, str], dict[str, list[tuple[str, ...]]]]:
    """Per (type, input) of a shared-scope row: each name the plan gives, with the URNs its value was made from."""
    found: dict[tuple[str, str], dict[str, list[tuple[str, ...]]]] = {}
    for resource in plan.resources:
        for (typ, path), rule in ROWS[plan.cloud].items():
            value = resource.inputs.get(path)
            if typ == resource.type and rule.scope in SHARED_SCOPES and isinstance(value, str):
                found.setdefault((typ, path), {}).setdefault(value, []).append(
                    resource.property_dependencies.get(path, ()))
    return found


def test_every_shipped_scheduler_is_compared() -> None:
    assert {read_cluster(stack)["cloud"] for stack in COMPARED_STACKS} == set(EXPECTED), COMPARED_STACKS


@pytest.mark.parametrize("stack", COMPARED_STACKS)
def test_dev_and_prod_of_one_kubernetes_cluster_share_no_region_or_account_scoped_name(tmp_path: Path,
                                                                                        stack: str) -> None:
    # Kubernetes objects have no row here (cluster-scoped, not the cloud's): the job operators' objects are left out.
    plans = {env: plan_stack(write_stack(tmp_path, f"{stack}-{env}",
                                         without_job_operators({**read_cluster(stack), "environment": env})))
             for env in ("dev", "prod")}
    dev, prod = scoped(plans["dev"]), scoped(plans["prod"])
    cloud = plans["dev"].cloud
    assert EXPECTED[cloud] <= {typ for typ, _ in dev}, "the plan lacks a name this test means to compare"
    clusters = {r.urn for r in plans["dev"].resources if r.type == ACK}
    shared = {}
    for key, names in dev.items():
        for name in names.keys() & prod.get(key, {}).keys():
            made_from = {urn for urns in names[name] for urn in urns}
            if key in FROM_CLUSTER_ID and made_from and made_from <= clusters:
                continue  # the cluster's id, which the cloud assigns per cluster
            shared[key] = (name, ROWS[cloud][key].scope, ROWS[cloud][key].source)
    assert not shared, shared  # each with its scope and the source that gives it
