"""Azure preflight of AKS stacks through the real SDK clients and recorded answers: the AKSInfinibandSupport feature
for InfiniBand groups only, the ContainerService provider, and the GPU quota of each agent pool (the VM quota check,
one pool per node group), and the API server endpoint reached as on EKS."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from api_server import closed_port
from azure_replay import INFER, TRAIN, account, cluster, fixture, managed_cluster, only, run, usages_with
from conftest import read_cluster
from test_preflight_azure_brought import GALLERY_VERSION, baked_lock

from gpufleet.clouds.backend import ResolvedCluster
from gpufleet.resolve import resolve_cluster

FEATURE = "features/AKSInfinibandSupport"
KUBERNETES = {"kind": "kubernetes", "version": "1.36"}


def aks(stack: str = TRAIN, group: dict[str, Any] | None = None) -> ResolvedCluster:
    # The VM template's GPU-idle rule is the cluster autoscaler's on AKS.
    return cluster(stack, {"idle": None, **(group or {})}, scheduler=KUBERNETES, storage={**_storage(stack)})


def _storage(stack: str) -> dict[str, Any]:
    storage = dict(read_cluster(stack)["storage"])
    storage.pop("shared", None)  # the AKS templates mount no Lustre and stripe no local NVMe
    storage["scratch"] = "none"
    return storage


def test_an_aks_stack_with_infiniband_asks_the_feature_and_the_provider() -> None:
    stack = aks()
    replay = account(stack)
    assert run(stack, replay) == []
    asked = " ".join(replay.asked)
    assert FEATURE in asked and "/providers/Microsoft.ContainerService " in asked + " "


def test_no_gallery_image_is_read_for_aks_nodes(tmp_path: Path) -> None:
    # AKS boots AKS's node image: a lock profile baked for Azure is not read (its driver version is what counts).
    raw = copy.deepcopy(read_cluster(TRAIN))
    raw.update(scheduler=KUBERNETES, storage=_storage(TRAIN))
    stack = resolve_cluster(raw, lock=baked_lock(tmp_path))
    replay = account(stack)
    assert run(stack, replay) == []
    assert not any(GALLERY_VERSION.lower() in path.lower() for path in replay.asked)


def test_the_infiniband_feature_not_registered_names_the_group_field() -> None:
    stack = aks()
    finding = only(run(stack, account(stack, infiniband_feature="feature-aksinfinibandsupport-notregistered")),
                   "azure-feature")
    assert finding.field == "node_groups[0].rdma" and finding.blocking
    assert "Microsoft.ContainerService/AKSInfinibandSupport is NotRegistered" in finding.says and "h100" in finding.says
    assert finding.fix.startswith("az feature register --namespace Microsoft.ContainerService --name "
                                  "AKSInfinibandSupport")


def test_a_pending_registration_blocks_too() -> None:
    stack = aks()
    finding = only(run(stack, account(stack, infiniband_feature="feature-aksinfinibandsupport-pending")),
                   "azure-feature")
    assert "is Pending" in finding.says and finding.blocking


def test_no_feature_is_asked_without_infiniband_or_without_kubernetes() -> None:
    for stack in (aks(INFER), cluster(TRAIN)):
        replay = account(stack, infiniband_feature="feature-aksinfinibandsupport-notregistered")
        assert run(stack, replay) == []
        assert not any(FEATURE in asked for asked in replay.asked)


def test_an_unregistered_container_service_provider_names_the_scheduler() -> None:
    stack = aks(INFER)
    finding = only(run(stack, account(stack, Microsoft_ContainerService="provider-notregistered")), "azure-provider")
    assert finding.field == "scheduler.kind" and "Microsoft.ContainerService is NotRegistered" in finding.says


def test_each_gpu_pool_is_counted_against_its_family_quota() -> None:
    stack = aks()
    finding = only(run(stack, account(stack, usages="usages-eastus-low-gpu-quota")), "azure-quota")
    assert finding.field == "node_groups[0].size.max"
    assert "standardNDSH100v5Family" in finding.says and "16 x Standard_ND96isr_H100_v5" in finding.says


def test_a_spot_pool_is_counted_against_the_spot_quota() -> None:
    stack = aks(INFER)
    finding = only(run(stack, account(stack, usages=usages_with({"lowPriorityCores": (0, 10)}))), "azure-quota")
    assert "lowPriorityCores" in finding.says and "needs 192" in finding.says


def _endpoint(stack: ResolvedCluster, replay: Any) -> list[Any]:
    return [f for f in run(stack, replay) if f.check == "azure-endpoint"]


def test_a_public_aks_endpoint_is_read_from_the_cluster_and_reached() -> None:
    stack = resolve_cluster(read_cluster("azure-train-aks"))
    assert stack.spec.scheduler.endpoint == "public"
    replay = account(stack)
    assert _endpoint(stack, replay) == []
    assert any("/managedclusters/gpufleet-train-aks-dev" in path.lower() for path in replay.asked)
    # The public FQDN is the one probed: the private one (unreachable from here) is not.
    replay.add(managed_cluster(stack, private_fqdn=closed_port()))
    assert _endpoint(stack, replay) == []
    replay.add(managed_cluster(stack, fqdn=closed_port()))
    (finding,) = _endpoint(stack, replay)
    assert (finding.field, finding.blocking) == ("scheduler.endpoint", True)
    assert "/healthz did not answer" in finding.says and "scheduler.public_cidrs" in finding.fix


def test_a_private_aks_endpoint_is_its_private_fqdn() -> None:
    stack = aks()
    assert stack.spec.scheduler.endpoint == "private"
    replay = account(stack)
    replay.add(managed_cluster(stack, private_fqdn=closed_port()))
    (finding,) = _endpoint(stack, replay)
    assert finding.blocking and "inside the cluster's network" in finding.fix


def test_an_aks_cluster_not_created_yet_is_a_note() -> None:
    stack = aks()
    replay = account(stack)
    recorded = managed_cluster(stack)
    replay.answer(recorded["request"], fixture("error-resource-not-found", path=recorded["request"].split(" ")[1]))
    (finding,) = _endpoint(stack, replay)
    assert not finding.blocking and "cluster gpufleet-train-dev does not exist yet" in finding.says
