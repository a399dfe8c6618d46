"""Azure node identity, brought resources, stack checks, the offline answers and the node's health endpoint."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pulumi
import pytest
from azure_plans import DES, ROLE, TRAIN, VMSS, one, plan_variant, shipped, variant
from conftest import REPO, of_type

from components.clouds.azure.lifecycle import terminate_notice
from gpufleet.catalog import load_catalog
from gpufleet.clouds.azure import mock_answers as mocks
from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile import SpecInvalid

SUB = "/subscriptions/0b1f6471-1bf0-4dda-aec3-cb9272f09590"
CONTAINER = f"{SUB}/resourceGroups/data/providers/Microsoft.Storage/storageAccounts/datasets/blobServices/default" \
            "/containers/train"
DCR = f"{SUB}/resourceGroups/obs/providers/Microsoft.Insights/dataCollectionRules/gpu-metrics"
READER = "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1"
PUBLISHER = "3913510d-42f4-4e42-8a64-420c390055eb"


def errors_of(cluster: dict) -> list[str]:
    with pytest.raises(SpecInvalid) as caught:
        resolve_cluster(cluster)
    return [str(e) for e in caught.value.errors]


def test_node_identity_reads_only_the_named_containers_and_publishes_metrics(tmp_path: Path) -> None:
    plan = plan_variant(tmp_path, variant(identity={"blob_read_containers": [CONTAINER], "metrics_scope": DCR}))
    identity = one(plan, "azure-native:managedidentity:UserAssignedIdentity")
    node_roles = [r for r in of_type(plan, ROLE) if identity.urn in r.property_dependencies.get("principalId", ())]
    granted = {(r.inputs["scope"], r.inputs["roleDefinitionId"].rsplit("/", 1)[1]) for r in node_roles}
    own_scale_set = f"{mocks_group(plan)}/providers/Microsoft.Compute/virtualMachineScaleSets/gpufleet-train-dev-h100"
    assert granted == {(CONTAINER, READER), (DCR, PUBLISHER), (own_scale_set, PUBLISHER)}
    # No assignment anywhere in the plan is at subscription or resource-group scope.
    for role in of_type(plan, ROLE):
        assert "/providers/" in role.inputs["scope"], role.inputs["scope"]
    scale_set = one(plan, VMSS)
    assert scale_set.property_dependencies["identity"] == (identity.urn,)
    assert scale_set.inputs["identity"]["type"] == "UserAssigned"


def mocks_group(plan) -> str:
    """The id of the stack's created resource group (named with the hash of its region: subscription-wide)."""
    (group,) = of_type(plan, "azure-native:resources:ResourceGroup")
    assert group.inputs["resourceGroupName"].startswith("gpufleet-train-dev-")
    return f"/subscriptions/{mocks.SUBSCRIPTION}/resourceGroups/{group.inputs['resourceGroupName']}"


def test_shipped_identity_holds_only_metrics_publisher_on_its_own_scale_set() -> None:
    plan = shipped(TRAIN)
    identity = one(plan, "azure-native:managedidentity:UserAssignedIdentity")
    (role,) = [r for r in of_type(plan, ROLE) if identity.urn in r.property_dependencies.get("principalId", ())]
    assert role.inputs["roleDefinitionId"].endswith(PUBLISHER)
    assert role.property_dependencies["scope"] == (one(plan, VMSS).urn,)


def test_a_container_id_is_required_not_an_account_or_subscription() -> None:
    errors = errors_of(variant(identity={"blob_read_containers": [SUB]}))
    assert any(e.startswith("identity.blob_read_containers[0]:") for e in errors)


def test_brought_identity_key_and_resource_group_are_used_not_created(tmp_path: Path) -> None:
    identity = f"{SUB}/resourceGroups/shared/providers/Microsoft.ManagedIdentity/userAssignedIdentities/nodes"
    vault = f"{SUB}/resourceGroups/shared/providers/Microsoft.KeyVault/vaults/shared-kv"
    key_url = "https://shared-kv.vault.azure.net/keys/disks/0123456789abcdef0123456789abcdef"
    plan = plan_variant(tmp_path, variant(
        identity={"identity_id": identity},
        storage={"kms_key": key_url, "key_vault_id": vault, "shared": None},
        network={"resource_group": "shared"},
    ))
    created = {r.type for r in plan.resources}
    assert not created & {"azure-native:managedidentity:UserAssignedIdentity", "azure-native:keyvault:Vault",
                          "azure-native:keyvault:Key", "azure-native:resources:ResourceGroup"}
    des = one(plan, DES)
    assert des.inputs["activeKey"] == {"keyUrl": key_url, "sourceVault": {"id": vault}}
    (assignment,) = [r for r in of_type(plan, ROLE) if des.urn in r.property_dependencies.get("principalId", ())]
    assert assignment.inputs["scope"] == f"{vault}/keys/disks"
    assert one(plan, VMSS).inputs["identity"]["userAssignedIdentities"] == [identity]
    assert {r.inputs["resourceGroupName"] for r in plan.resources if "resourceGroupName" in r.inputs} == {"shared"}


def test_a_brought_identity_publishes_its_scale_sets_metrics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its object id is read (Managed Identity Get on the group and name its id gives) and holds Monitoring Metrics
    Publisher on the scale set, as a created identity does: without it metrics, alerts and `idle` see nothing."""
    from gpufleet.plan.mock_dispatch import OfflineMocks

    asked: list[tuple[str, dict]] = []
    answer = OfflineMocks.call

    def recording(self: OfflineMocks, args: pulumi.runtime.MockCallArgs) -> dict:
        asked.append((args.token, dict(args.args)))
        return answer(self, args)

    monkeypatch.setattr(OfflineMocks, "call", recording)
    identity = f"{SUB}/resourceGroups/shared/providers/Microsoft.ManagedIdentity/userAssignedIdentities/nodes"
    plan = plan_variant(tmp_path, variant(identity={"identity_id": identity}))
    assert ("azure-native:managedidentity:getUserAssignedIdentity",
            {"resourceGroupName": "shared", "resourceName": "nodes"}) in asked
    scale_set = one(plan, VMSS)
    assert scale_set.inputs["identity"]["userAssignedIdentities"] == [identity]
    (grant,) = [r for r in of_type(plan, ROLE) if r.property_dependencies.get("scope") == (scale_set.urn,)
                and r.inputs["roleDefinitionId"].endswith(PUBLISHER)
                and r.inputs["principalType"] == "ServicePrincipal"]
    assert grant.inputs["principalId"]  # the object id Get answered


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"group": {"instance_types": ["Standard_ND96isr_H100_v5", "Standard_ND96isr_H200_v5"]}},
         "node_groups[0].instance_types[1]: an Azure scale set runs one VM size"),
        ({"storage": {"ephemeral_os_disk": True}}, "storage.ephemeral_os_disk: refused"),
        ({"storage": {"kms_key": "https://kv1.vault.azure.net/keys/k/0123456789abcdef0123456789abcdef"}},
         "storage.key_vault_id: a brought kms_key needs the resource id of its vault"),
        ({"network": {"cidr": "10.42.0.0/25"}, "group": {"size": {"min": 0, "desired": 2, "max": 60}}},
         "network.cidr: 10.42.0.0/25 is too small: the node subnet (26-bit prefix, 59 usable addresses) cannot hold 60 "
         "nodes at max size; use a /24 or larger"),
        ({"group": {"capacity": "spot", "on_demand_base": 1}},
         "node_groups[0].on_demand_base: an InfiniBand group is one Uniform scale set, all Spot or all Regular"),
        ({"group": {"capacity": "reservation", "reservation_id": "/x", "rdma": "off",
                    "instance_types": ["Standard_NC24ads_A100_v4"]}, "network": {"zones": []},
          "storage": {"shared": None}}, None),
    ],
    ids=["fallback-size", "ephemeral-os", "key-without-vault", "subnet-too-small", "ib-spot-with-base",
         "reservation-on-nc-is-fine"],
)
def test_azure_checks(changes: dict, expected: str | None) -> None:
    group = changes.pop("group", None)
    cluster = variant(group=group, **changes)
    if expected is None:
        assert resolve_cluster(cluster).groups[0].spec.capacity == "reservation"
        return
    assert any(e.startswith(expected) for e in errors_of(cluster)), errors_of(cluster)


@pytest.mark.parametrize("key", [
    "https://kv1.vault.azure.net/disks",  # no key name: the key's role scope could not be derived
    "https://kv1.vault.azure.net/keys/disks",  # no version: the Disk Encryption Set starts from one
    "https://kv1.example.com/keys/disks/0123456789abcdef0123456789abcdef",  # not a Key Vault
])
def test_a_brought_key_must_be_a_versioned_key_vault_key_id(key: str) -> None:
    vault = f"{SUB}/resourceGroups/shared/providers/Microsoft.KeyVault/vaults/kv1"
    errors = errors_of(variant(storage={"kms_key": key, "key_vault_id": vault}))
    assert any(e.startswith("storage.kms_key:") for e in errors), errors


def test_reservation_on_an_ib_group_names_the_single_placement_group() -> None:
    cluster = variant(group={"capacity": "reservation", "reservation_id": "/x",
                             "instance_types": ["Standard_NC24ads_A100_v4"], "rdma": "required"})
    assert any("singlePlacementGroup" in e for e in errors_of(cluster))


@pytest.mark.parametrize(("grace", "timeout"), [(30, "PT5M"), (300, "PT5M"), (301, "PT6M"), (7200, "PT15M")])
def test_terminate_notice_is_the_grace_clamped_to_azures_bounds(grace: int, timeout: str) -> None:
    assert terminate_notice(grace, load_catalog()).not_before_timeout == timeout


def test_a_real_deploy_without_an_admin_key_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from components import runtime
    from components.clouds.azure.cluster import refuse_without_admin_key

    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    with pytest.raises(pulumi.RunError, match="admin_ssh_public_key: unset"):
        refuse_without_admin_key(resolve_cluster(variant()))
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    key = Ed25519PrivateKey.generate().public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).decode()
    refuse_without_admin_key(resolve_cluster(variant(admin_ssh_public_key=f"{key} me@host")))


def test_a_real_deploy_of_the_unbaked_azure_image_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import gpufleet.program as program
    from components import runtime

    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    with pytest.raises(pulumi.RunError, match="has no baked azure image in eastus"):
        program.refuse_unbaked_image(resolve_cluster(variant()))


def test_mock_ids_have_azures_shapes_and_are_deterministic() -> None:
    inputs = {"resourceGroupName": "rg1", "vmScaleSetName": "gpufleet-train-dev-h100"}
    arm_id, outputs = mocks.new_resource(VMSS, "train-h100-vmss", inputs, "eastus")
    assert arm_id == (f"/subscriptions/{mocks.SUBSCRIPTION}/resourceGroups/rg1/providers/"
                      "Microsoft.Compute/virtualMachineScaleSets/gpufleet-train-dev-h100")
    assert outputs["name"] == "gpufleet-train-dev-h100"
    subnet_id, _ = mocks.new_resource("azure-native:network:Subnet", "s", {"resourceGroupName": "rg1",
                                      "virtualNetworkName": "v1", "subnetName": "nodes"}, "eastus")
    assert subnet_id.endswith("/providers/Microsoft.Network/virtualNetworks/v1/subnets/nodes")
    role_id, role = mocks.new_resource(ROLE, "r", {"scope": subnet_id}, "eastus")
    assert role_id == f"{subnet_id}/providers/Microsoft.Authorization/roleAssignments/{role['name']}"
    assert mocks.new_resource(ROLE, "r", {"scope": subnet_id}, "eastus") == (role_id, role)
    config = mocks.invoke("azure-native:authorization:getClientConfig", "eastus", [])
    assert config is not None and config["subscriptionId"] == mocks.SUBSCRIPTION
    assert mocks.invoke("azure-native:compute:getVirtualMachineScaleSet", "eastus", []) is None
    with pytest.raises(LookupError, match="no offline azure answer"):
        mocks.new_resource("azure-native:web:WebApp", "w", {"resourceGroupName": "rg1"}, "eastus")


def test_two_plans_of_the_azure_stack_are_identical(tmp_path: Path) -> None:
    first = plan_variant(tmp_path, variant())
    second = plan_variant(tmp_path, variant())
    assert [r.__dict__ for r in first.resources] == [r.__dict__ for r in second.resources]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _status(port: int) -> tuple[int, bytes]:
    for _ in range(50):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()
        except OSError:
            time.sleep(0.1)
    raise AssertionError("health endpoint never answered")


def test_health_endpoint_serves_the_node_check_result(tmp_path: Path) -> None:
    script = REPO / "components/bootstrap/scripts/health-endpoint.py"
    port = _free_port()
    env = {**os.environ, "GPUFLEET_RUN": str(tmp_path), "GPUFLEET_HEALTH_PORT": str(port)}
    server = subprocess.Popen([sys.executable, str(script)], env=env)
    try:
        assert _status(port) == (503, b'{"ApplicationHealthState": "Unhealthy"}')
        (tmp_path / "healthy").touch()  # what gpufleet-health writes after a passed node check
        assert _status(port) == (200, b'{"ApplicationHealthState": "Healthy"}')
    finally:
        server.terminate()
        server.wait(timeout=5)
