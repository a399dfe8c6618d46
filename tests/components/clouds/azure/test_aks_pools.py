"""The agent pools and the in-cluster layer of a `scheduler: kubernetes` Azure stack: one User pool per node group
(VM size, zones, autoscaler bounds, Spot, MIG, taints and labels, no AKS driver, creation-only fields replacing the
pool), the Kubernetes provider's kubelogin kubeconfig, the InCluster objects told about Azure, and the stack outputs.
The stacks are the shipped AKS ones."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest
from conftest import of_type, one
from kubernetes_schemas import validate
from test_aks_cluster import VERSION, aks_cluster, plan_of

import components.clouds.azure.aks_pools as aks_pools
import components.clouds.azure.aks_steps as aks_steps
from components.clouds.azure.aks_in_cluster import KUBELOGIN_ARGS
from gpufleet.lock import load_lock
from gpufleet.plan.kubernetes_answers import is_kubernetes
from gpufleet.plan.planner import PlanResult

POOL = "azure-native:containerservice:AgentPool"
CLUSTER = "azure-native:containerservice:ManagedCluster"
GPU_TAINT = "nvidia.com/gpu=present:NoSchedule"
TEMPLATE = "k8s.io_cluster-autoscaler_node-template_resources_"
RESERVATION = ("/subscriptions/11111111-1111-4111-8111-111111111111/resourceGroups/rg/providers/Microsoft.Compute/"
               "capacityReservationGroups/crg")
SPOT_TAINT = ("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule")


class Spied:
    """What the program handed the in-cluster layer and each pool's options."""

    def __init__(self) -> None:
        self.in_cluster: list[Any] = []
        self.pool_options: dict[str, pulumi.ResourceOptions] = {}


@pytest.fixture(scope="module")
def spied_plans(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, PlanResult], Spied]]:
    """The train (InfiniBand, on-demand), infer (Spot) and MIG infer stacks as AKS, with the InCluster arguments and
    the pool options recorded."""
    spied = Spied()
    patch = pytest.MonkeyPatch()
    in_cluster, agent_pool = aks_steps.InCluster, aks_pools.containerservice.AgentPool

    def spy_in_cluster(name: str, args: Any, opts: Any = None) -> Any:
        spied.in_cluster.append(args)
        return in_cluster(name, args, opts)

    def spy_pool(name: str, **kwargs: Any) -> Any:
        spied.pool_options[name] = kwargs["opts"]
        return agent_pool(name, **kwargs)

    patch.setattr(aks_steps, "InCluster", spy_in_cluster)
    patch.setattr(aks_pools.containerservice, "AgentPool", spy_pool)
    mig = aks_cluster("azure-infer-a100")
    mig["node_groups"][0].update(capacity="on-demand", gpu_sharing={"mode": "mig", "mig_profile": "all-1g.10gb"})
    mig["node_groups"][0].pop("spot_max_price", None)
    try:
        plans = {
            "train": plan_of(tmp_path_factory.mktemp("train"), aks_cluster()),
            "infer": plan_of(tmp_path_factory.mktemp("infer"), aks_cluster("azure-infer-a100")),
            "mig": plan_of(tmp_path_factory.mktemp("mig"), mig),
        }
        yield plans, spied
    finally:
        patch.undo()


@pytest.fixture(scope="module")
def plans(spied_plans: tuple[dict[str, PlanResult], Spied]) -> dict[str, PlanResult]:
    return spied_plans[0]


def test_each_group_gets_a_user_pool_autoscaled_between_its_bounds(plans: dict[str, PlanResult]) -> None:
    pool = one(plans["train"], POOL)
    inputs = pool.inputs
    assert inputs["agentPoolName"] == "h100" and inputs["mode"] == "User"
    assert inputs["vmSize"] == "Standard_ND96isr_H100_v5" and inputs["availabilityZones"] == ["1"]
    assert (inputs["enableAutoScaling"], inputs["minCount"], inputs["maxCount"]) == (True, 0, 16)
    assert inputs["orchestratorVersion"] == VERSION and inputs["osSKU"] == "Ubuntu"
    assert inputs["enableEncryptionAtHost"] is True and inputs["enableNodePublicIP"] is False
    assert inputs["scaleSetPriority"] == "Regular" and "spotMaxPrice" not in inputs
    assert pool.property_dependencies["resourceName"] == (one(plans["train"], CLUSTER).urn,)
    assert "count" in pool.ignore_changes  # the autoscaler owns it


def test_aks_installs_no_driver_the_gpu_operator_installs_the_lock_one(plans: dict[str, PlanResult],
                                                                       spied_plans: tuple[Any, Spied]) -> None:
    for plan in plans.values():
        assert one(plan, POOL).inputs["gpuProfile"] == {"driver": "None"}
    drivers = {args.driver for args in spied_plans[1].in_cluster}
    assert drivers == {load_lock().profiles["cuda12.8-r580"].driver}


def test_gpu_nodes_carry_the_gpu_taint_and_gpufleet_labels(plans: dict[str, PlanResult]) -> None:
    inputs = one(plans["train"], POOL).inputs
    # No node-check taint: AKS forbids removing a pool's taint from a node, so the check gates by a label.
    assert inputs["nodeTaints"] == [GPU_TAINT]
    assert inputs["nodeLabels"] == {"gpufleet.io/group": "h100", "gpufleet.io/fabric": "infiniband"}


def test_the_autoscaler_template_of_each_pool_carries_what_a_checked_node_advertises(
        plans: dict[str, PlanResult]) -> None:
    """AKS's cluster autoscaler reads a pool's scale-set tags as its template node's resources (azure_template.go):
    the IB pool's rdma/ib and GPUs, the MIG pool's GPUs as MIG devices, so pods asking for them scale from zero."""
    assert one(plans["train"], POOL).inputs["tags"] == {f"{TEMPLATE}nvidia.com_gpu": "8", f"{TEMPLATE}rdma_ib": "63"}
    assert one(plans["infer"], POOL).inputs["tags"] == {f"{TEMPLATE}nvidia.com_gpu": "1"}
    assert one(plans["mig"], POOL).inputs["tags"] == {f"{TEMPLATE}nvidia.com_gpu": "7"}  # all-1g.10gb, single


def test_a_spot_group_is_a_spot_pool_evicted_by_delete_never_for_price(plans: dict[str, PlanResult]) -> None:
    inputs = one(plans["infer"], POOL).inputs
    assert inputs["scaleSetPriority"] == "Spot" and inputs["scaleSetEvictionPolicy"] == "Delete"
    assert inputs["spotMaxPrice"] == -1
    assert inputs["nodeLabels"]["gpufleet.io/fabric"] == "none"


def test_a_mig_group_sets_the_pool_instance_profile(plans: dict[str, PlanResult]) -> None:
    inputs = one(plans["mig"], POOL).inputs
    assert inputs["gpuInstanceProfile"] == "MIG1g"
    assert "gpuInstanceProfile" not in one(plans["infer"], POOL).inputs


def test_creation_only_fields_replace_the_pool(spied_plans: tuple[Any, Spied]) -> None:
    options = spied_plans[1].pool_options
    assert set(options) == {"train-h100", "infer-a100"}
    for opts in options.values():
        assert {"vmSize", "gpuInstanceProfile", "scaleSetPriority", "spotMaxPrice", "nodeTaints",
                "enableEncryptionAtHost"} <= set(opts.replace_on_changes or [])


def test_the_provider_authenticates_with_kubelogin_from_the_azure_cli(plans: dict[str, PlanResult]) -> None:
    plan = plans["train"]
    provider = one(plan, "pulumi:providers:kubernetes")
    config = json.loads(provider.inputs["kubeconfig"])
    (user,) = config["users"]
    assert user["user"] == {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "kubelogin",
                                     "args": KUBELOGIN_ARGS}}
    assert KUBELOGIN_ARGS == ["get-token", "--login", "azurecli", "--server-id", "6dae42f8-4368-4678-94ff-3960e28e3630"]
    (entry,) = config["clusters"]
    assert entry["cluster"]["server"].startswith("https://")
    assert one(plan, CLUSTER).urn in provider.property_dependencies["kubeconfig"]
    waits_for = set(provider.depends_on)
    assert one(plan, POOL).urn in waits_for
    assert any(urn.endswith("train-aks-admins-propagated") for urn in waits_for)


def test_the_in_cluster_layer_is_told_about_azure_and_each_pool(spied_plans: tuple[Any, Spied]) -> None:
    train, infer, _ = spied_plans[1].in_cluster  # in the order the plans were made
    assert {train.cloud, infer.cloud} == {"azure"}
    (h100,) = train.groups
    assert (h100.fabric, h100.scaling_group_name, h100.spot) == ("infiniband", "h100", False)
    assert h100.taints == (("nvidia.com/gpu", "present", "NoSchedule"),)
    assert set(train.node_check) == {"h100"} and train.node_check["h100"]["driver"] == train.driver
    (a100,) = infer.groups
    assert a100.spot is True and SPOT_TAINT in a100.taints  # AKS taints every spot node
    assert a100.labels["kubernetes.azure.com/scalesetpriority"] == "spot"


def test_every_in_cluster_object_sits_under_the_in_cluster_layer_and_validates(plans: dict[str, PlanResult]) -> None:
    for plan in plans.values():
        in_cluster = one(plan, "gpufleet:kubernetes:InCluster")
        objects = [r for r in plan.resources if is_kubernetes(r.type)]
        assert objects and {r.parent for r in objects} == {in_cluster.urn}
        crds = [r.inputs for r in objects if r.inputs["kind"] == "CustomResourceDefinition"]
        for obj in objects:
            validate(obj.inputs, VERSION, crds)


def test_the_stack_outputs_name_the_cluster_and_how_to_get_credentials(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    exported: dict[str, Any] = {}

    def export(name: str, value: Any) -> None:
        if isinstance(value, pulumi.Output):
            value.apply(lambda resolved: exported.setdefault(name, resolved))
        else:
            exported[name] = value

    monkeypatch.setattr(pulumi, "export", export)
    plan = plan_of(tmp_path, aks_cluster())
    cluster = one(plan, CLUSTER).inputs
    assert exported["kubernetes_cluster"] == cluster["resourceName"] == "gpufleet-train-dev"
    assert exported["kubeconfig"] == (
        f"az aks get-credentials --resource-group {cluster['resourceGroupName']} --name gpufleet-train-dev && "
        "kubelogin convert-kubeconfig -l azurecli")
    assert exported["scale_set_ids"] == {}
    kms = next(r for r in plan.resources if r.name == "train-kms").inputs
    assert exported["kubernetes_kms_key"].startswith(f"https://{kms['vaultName']}.vault.azure.net/keys/gpufleet-kms/")


def test_pool_names_are_lower_case_letters_and_digits_within_twelve() -> None:
    assert aks_pools.pool_name("H100-Train_Pool-xyz") == "h100trainpoo"
    assert aks_pools.pool_name("8gpu") == "g8gpu"


def test_no_scale_set_or_node_identity_in_an_aks_stack(plans: dict[str, PlanResult]) -> None:
    for plan in plans.values():
        assert not of_type(plan, "azure-native:compute:VirtualMachineScaleSet")


def aks_resources(plan: PlanResult) -> list[Any]:
    return [r for r in plan.resources if r.type.startswith("azure-native:") and r.name.split("-", 1)[1].startswith(
        ("aks", "kms", "apiserver", "h100", "a100"))]


def test_aks_resources_register_only_inputs_the_sdk_declares(plans: dict[str, PlanResult]) -> None:
    from pulumi._types import _py_properties
    from pulumi_azure_native import (
        alertsmanagement,
        authorization,
        containerservice,
        keyvault,
        managedidentity,
        network,
    )

    args = {CLUSTER: containerservice.ManagedClusterArgs, POOL: containerservice.AgentPoolArgs,
            "azure-native:alertsmanagement:PrometheusRuleGroup": alertsmanagement.PrometheusRuleGroupArgs,
            "azure-native:network:Subnet": network.SubnetInitArgs, "azure-native:keyvault:Key": keyvault.KeyArgs,
            "azure-native:managedidentity:UserAssignedIdentity": managedidentity.UserAssignedIdentityArgs,
            "azure-native:authorization:RoleAssignment": authorization.RoleAssignmentArgs}
    checked = [r for plan in plans.values() for r in aks_resources(plan)]
    assert {r.type for r in checked} == set(args)
    for resource in checked:
        declared = {camel for _, camel, _ in _py_properties(args[resource.type])}
        assert set(resource.inputs) <= declared, resource.name


def test_every_aks_name_has_a_row_and_fits_it(plans: dict[str, PlanResult]) -> None:
    from gpufleet.clouds.azure.names import NAMES

    def names(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
        if isinstance(value, dict):
            for key, item in value.items():
                yield from names(item, f"{path}.{key}" if path else key)
        elif isinstance(value, list):
            for item in value:
                yield from names(item, f"{path}[]")
        elif isinstance(value, str) and path.rsplit(".", 1)[-1].removesuffix("[]").lower().endswith("name"):
            yield path, value

    found = 0
    for plan in plans.values():
        for resource in aks_resources(plan):
            for path, value in names(resource.inputs):
                rule = NAMES.rule(resource.type, path)
                assert rule is not None or (resource.type, path) in NAMES.not_created, (resource.type, path)
                if rule is not None:
                    found += 1
                    assert not rule.problems(value), (resource.type, path, value)
    assert found >= 6


def test_the_conversion_keeps_the_server_id_the_user_had_and_drops_any_other_login() -> None:
    from components.clouds.azure.aks_in_cluster import kubelogin_kubeconfig

    config = {"users": [{"name": "u", "user": {"exec": {"command": "kubelogin", "args": [
        "get-token", "--login", "devicecode", "--server-id", "other-server", "--client-id", "c"]}}}]}
    (user,) = json.loads(kubelogin_kubeconfig(config))["users"]
    assert user["user"]["exec"]["args"] == ["get-token", "--login", "azurecli", "--server-id", "other-server"]
