"""The fabric manager runs only where the group's instance type has NVSwitches, decided per group from the catalog
at boot: the one baked image (image stacks bake with nvswitch: true) leaves it installed and disabled, an NVSwitch
group's bootstrap enables and starts it before the node check (which expects it active only on such types), and
NC A100 v4 / gn7i groups booting the same image never start it."""

from __future__ import annotations

from dataclasses import replace

import pytest
import yaml
from azure_plans import INFER, TRAIN, VMSS, cloud_init, one, shipped
from bootstrap_node import A100, H100, config, node_files

from components.bootstrap import BootstrapError, render_user_data
from components.bootstrap.cloud_init import node_script

FM = "nvidia-fabricmanager.service"


def _runcmd(user_data: str) -> list[list[str]]:
    return yaml.safe_load(user_data)["runcmd"]


def test_an_nvswitch_group_enables_and_starts_the_fabric_manager_before_the_node_check() -> None:
    _, enable, start = _runcmd(render_user_data(config("azure")))
    for command in (enable, start):
        assert FM in command and command.index(FM) < command.index("gpufleet-health.service")
    # systemd orders the node check after the fabric manager even though both start with --no-block.
    assert "nvidia-fabricmanager.service" in node_script("gpufleet-health.service").split("After=", 1)[1].split("\n")[0]


def test_a_group_without_nvswitches_never_starts_it() -> None:
    pcie = {"Standard_NC96ads_A100_v4": replace(A100, nvswitch=False, fabric="none", fabric_interfaces=0)}
    user_data = render_user_data(config("azure", expected=pcie))
    assert not any(FM in command for command in _runcmd(user_data))
    expect = yaml.safe_load(node_files(user_data)["/etc/gpufleet/expect.json"]["content"])
    assert expect["instance_types"]["Standard_NC96ads_A100_v4"]["nvswitch"] is False  # the node check skips it


def test_types_with_and_without_nvswitches_cannot_share_a_group() -> None:
    mixed = {"p5.48xlarge": H100, "g6e.48xlarge": replace(H100, nvswitch=False)}
    with pytest.raises(BootstrapError, match=r"node group h100: instance types with NVSwitches \(p5.48xlarge\)"):
        config("aws", expected=mixed)


@pytest.mark.parametrize(("stack", "runs"), [(TRAIN, True), (INFER, False)])
def test_shipped_azure_stacks_start_it_on_nd_h100_only(stack: str, runs: bool) -> None:
    document = cloud_init(one(shipped(stack), VMSS))
    assert any(FM in command for command in document["runcmd"]) is runs
