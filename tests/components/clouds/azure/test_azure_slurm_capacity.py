"""The Azure side of the Slurm power programs through the official Compute client (azure-mgmt-compute: building each
request, serialising the body, the long-running operation) against recorded answers (azure_replay): the scale set's
sku.capacity read and PATCHed, named VMs deleted, and deleted ones asked for again where the group replaces them."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from azure.mgmt.compute import ComputeManagementClient
from azure_replay import SUBSCRIPTION, Replay, TestCredential, fixture

from components.clouds.azure import slurm_capacity
from components.clouds.azure.slurm_capacity import ScaleSetCapacity

RECORDED = Path(__file__).parents[3] / "data" / "slurm" / "azure"
SCALE_SET = "gpufleet-train-dev-h100"


def capacity(*answers: str) -> tuple[ScaleSetCapacity, Replay]:
    replay = Replay(writes=True)
    for name in answers:
        replay.add(fixture(name, RECORDED))
    client = ComputeManagementClient(TestCredential(), SUBSCRIPTION, transport=replay)
    return ScaleSetCapacity(client, "train-rg"), replay


def sent(replay: Replay) -> list[tuple[str, object]]:
    """(method and path, JSON body) of each request."""
    return [(f"{request.method} {request.url.split('?')[0].split('/train-rg/')[1]}",
             json.loads(request.content) if request.content else None) for request in replay.sent]


def test_desired_is_the_scale_sets_sku_capacity() -> None:
    scale_sets, _ = capacity("vmss-h100")
    assert scale_sets.desired(SCALE_SET) == 2


def test_set_desired_patches_sku_capacity_keeping_the_size() -> None:
    scale_sets, replay = capacity("vmss-h100", "vmss-h100-updated")
    scale_sets.set_desired(SCALE_SET, 3)
    assert sent(replay)[-1] == (
        f"PATCH providers/Microsoft.Compute/virtualMachineScaleSets/{SCALE_SET}",
        {"sku": {"name": "Standard_ND96isr_H100_v5", "tier": "Standard", "capacity": 3}})


def test_give_back_deletes_the_named_instances() -> None:
    scale_sets, replay = capacity("vmss-h100", "vmss-h100-deleted-instances")
    scale_sets.give_back(SCALE_SET, ["3", "5"], lower_desired=True)
    assert [call for call in sent(replay) if not call[0].startswith("GET")] == [
        (f"POST providers/Microsoft.Compute/virtualMachineScaleSets/{SCALE_SET}/delete",
         {"instanceIds": ["3", "5"]})]


def test_a_replaced_instance_is_deleted_and_asked_for_again() -> None:
    scale_sets, replay = capacity("vmss-h100", "vmss-h100-deleted-instances", "vmss-h100-updated")
    scale_sets.give_back(SCALE_SET, ["3"], lower_desired=False)
    writes = [call for call in sent(replay) if not call[0].startswith("GET")]
    assert writes == [
        (f"POST providers/Microsoft.Compute/virtualMachineScaleSets/{SCALE_SET}/delete", {"instanceIds": ["3"]}),
        (f"PATCH providers/Microsoft.Compute/virtualMachineScaleSets/{SCALE_SET}",
         {"sku": {"name": "Standard_ND96isr_H100_v5", "tier": "Standard", "capacity": 2}}),
    ]


class InstanceMetadata(BaseHTTPRequestHandler):
    """The compute section of Azure's instance metadata service: answered only with the header Metadata: true."""

    def do_GET(self) -> None:  # noqa: N802 - the http.server hook name
        ok = self.headers.get("Metadata") == "true" and self.path.startswith("/metadata/instance/compute?")
        body = json.dumps({"subscriptionId": SUBSCRIPTION, "resourceGroupName": "train-rg", "location": "eastus"})
        self.send_response(200 if ok else 400)
        self.end_headers()
        self.wfile.write(body.encode() if ok else b"")

    def log_message(self, *_: object) -> None:
        pass


def test_the_head_node_finds_its_subscription_and_resource_group_in_its_metadata(
        monkeypatch: pytest.MonkeyPatch) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), InstanceMetadata)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        address = f"http://127.0.0.1:{server.server_address[1]}"
        monkeypatch.setattr(slurm_capacity, "INSTANCE_METADATA",
                            slurm_capacity.INSTANCE_METADATA.replace("http://169.254.169.254", address))
        scale_sets = slurm_capacity.capacity_in("eastus")
    finally:
        server.shutdown()
        server.server_close()
    assert scale_sets.resource_group == "train-rg"
    assert scale_sets.client._config.subscription_id == SUBSCRIPTION
