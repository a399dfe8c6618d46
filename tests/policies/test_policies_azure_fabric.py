"""Azure InfiniBand, spot and image rules, and the group reader the common budget rule uses."""

from __future__ import annotations

from azure_rule_args import GALLERY_VERSION, IB_SIZE, VMSS, messages, res, scale_set, validate

from gpufleet.lock import load_lock
from policies.meta import Node, Stack
from policies.registry import READERS

AUTOSCALE = "azure-native:monitor:AutoscaleSetting"
VNET = "azure-native:network:VirtualNetwork"


def autoscale(vmss_urn: str, maximum: str) -> object:
    inputs = {"targetResourceUri": "id", "profiles": [{"name": "p", "capacity": {
        "minimum": "0", "default": "2", "maximum": maximum}, "rules": []}]}
    deps = {"targetResourceUri": (vmss_urn,)}
    return res(AUTOSCALE, "scale", inputs, depends_on=(vmss_urn,), property_dependencies=deps)


def test_ib_scale_set_needs_single_placement_group_and_uniform() -> None:
    vmss = res(VMSS, "ib", scale_set(singlePlacementGroup=False, orchestrationMode="Flexible"))
    found = [m for _, m in messages("azure-ib-single-placement-group", [vmss])]
    assert len(found) == 2 and "Flexible" in found[0] and "single_placement_group = True" in found[1]
    assert messages("azure-ib-single-placement-group", [res(VMSS, "ib", scale_set())]) == []


def test_ib_scale_set_over_100_at_max_fails_through_its_autoscale_setting() -> None:
    vmss = res(VMSS, "ib", scale_set())
    (found,) = messages("azure-ib-single-placement-group", [vmss, autoscale(vmss.urn, "150")])
    assert found == (vmss.urn, found[1]) and "reaches 150 VMs at max size" in found[1]
    assert messages("azure-ib-single-placement-group", [vmss, autoscale(vmss.urn, "100")]) == []
    # A non-IB size is not held to the limit.
    other = res(VMSS, "nc", scale_set(**{"sku": {"name": "Standard_NC24ads_A100_v4", "capacity": 500}}))
    assert messages("azure-ib-single-placement-group", [other]) == []


def node(resource) -> Node:
    return Node(resource.urn, resource.type, resource.name, resource.inputs, None, frozenset(resource.depends_on),
                {k: frozenset(v) for k, v in resource.property_dependencies.items()})


def test_group_reader_reads_the_autoscale_maximum_else_capacity() -> None:
    vmss = res(VMSS, "ib", scale_set())
    (with_autoscale,) = READERS.group_sizes(Stack([node(vmss), node(autoscale(vmss.urn, "16"))]))
    assert (with_autoscale.cloud, with_autoscale.instance_type, with_autoscale.count) == ("azure", IB_SIZE, 16)
    (alone,) = READERS.group_sizes(Stack([node(vmss)]))
    assert alone.count == 2


def test_vnet_overlapping_the_ib_range_fails_only_with_ib() -> None:
    vnet = res(VNET, "vnet", {"addressSpace": {"addressPrefixes": ["172.16.0.0/12"]}})
    (found,) = messages("azure-vnet-clear-of-ib-range", [vnet, res(VMSS, "ib", scale_set())])
    assert "overlaps 172.16.0.0/16" in found[1]
    clear = res(VNET, "vnet", {"addressSpace": {"addressPrefixes": ["10.42.0.0/16"]}})
    assert messages("azure-vnet-clear-of-ib-range", [clear, res(VMSS, "ib", scale_set())]) == []


def test_spot_eviction_must_be_delete() -> None:
    spot = scale_set(**{"virtualMachineProfile.priority": "Spot", "virtualMachineProfile.evictionPolicy": "Deallocate"})
    (message,) = validate("azure-spot-eviction-delete", VMSS, spot)
    assert "eviction_policy 'Deallocate'" in message
    spot["virtualMachineProfile"]["evictionPolicy"] = "Delete"
    assert validate("azure-spot-eviction-delete", VMSS, spot) == []


def test_image_must_be_pinned_in_the_lock() -> None:
    path = "virtualMachineProfile.storageProfile.imageReference"
    latest = {"publisher": "Canonical", "offer": "0001-com-ubuntu-server-jammy", "sku": "22_04-lts-gen2",
              "version": "latest"}
    (message,) = validate("azure-image-pinned", VMSS, scale_set(**{path: latest}))
    assert "resolves 'latest'" in message
    (message,) = validate("azure-image-pinned", VMSS, scale_set(**{path: {"id": GALLERY_VERSION}}))
    assert "is not pinned in images/lock.yaml" in message
    base = load_lock().base_image("azure", "eastus")
    pinned = dict(zip(("publisher", "offer", "sku", "version"), base.split(":"), strict=True))
    assert validate("azure-image-pinned", VMSS, scale_set(**{path: pinned})) == []
