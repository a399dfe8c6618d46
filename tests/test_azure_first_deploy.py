"""Azure create-path checks a first real deploy needs, each refused before any resource with exit 2 by field
path: egress on a created network is one zonal NAT gateway."""

from __future__ import annotations

from pathlib import Path

from azure_plans import INFER, VMSS, one, plan_cli, plan_variant, shipped, variant


def test_a_created_network_over_several_zones_is_refused_naming_network_zones(tmp_path: Path) -> None:
    cluster = variant(INFER, network={"zones": ["1", "2", "3"]})
    result = plan_cli(tmp_path, cluster)
    assert result.exit_code == 2
    assert "network.zones" in result.output and "one zonal NAT gateway" in result.output


def test_a_brought_subnet_may_span_zones(tmp_path: Path) -> None:
    group = "/subscriptions/11111111-1111-4111-8111-111111111111/resourceGroups/net"
    vnet = f"{group}/providers/Microsoft.Network/virtualNetworks/v"
    network = {"cidr": None, "zones": ["1", "2", "3"], "vnet_id": vnet, "subnet_id": f"{vnet}/subnets/nodes"}
    result = plan_cli(tmp_path, variant(INFER, network=network))
    assert "one zonal NAT gateway" not in result.output
    assert result.exit_code in (0, 1), result.output


def test_a_regular_base_under_spot_is_refused_naming_on_demand_base(tmp_path: Path) -> None:
    result = plan_cli(tmp_path, variant(INFER, group={"capacity": "spot", "on_demand_base": 1}))
    assert result.exit_code == 2
    assert "node_groups[0].on_demand_base" in result.output and "no terminate notification" in result.output


def test_no_spot_scale_set_claims_a_checkpoint_on_scale_in(tmp_path: Path) -> None:
    spot = one(shipped(INFER), VMSS).inputs["virtualMachineProfile"]
    assert spot["priority"] == "Spot" and "scheduledEventsProfile" not in spot
    regular = one(plan_variant(tmp_path, variant(INFER, group={"capacity": "on-demand"})), VMSS)
    notice = regular.inputs["virtualMachineProfile"]["scheduledEventsProfile"]["terminateNotificationProfile"]
    assert notice["enable"] is True
