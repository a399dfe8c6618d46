"""The fabric manager runs only where the group's instance type has NVSwitches, decided per group from the catalog
at boot: the one baked image (image stacks bake with nvswitch: true) leaves it installed and disabled, an NVSwitch
group's bootstrap enables and starts it before the node check (which expects it active only on such types), and
NC A100 v4 / gn7i groups booting the same image never start it."""

from __future__ import annotations

from dataclasses import replace

import libyaml_files
import pytest
from azure_plans import INFER, TRAIN, VMSS, cloud_init, one, shipped
from bootstrap_node import A100, H100, Node, config, node_files

from components.bootstrap import BootstrapError, render_user_data
from components.bootstrap.cloud_init import node_script

FM = "nvidia-fabricmanager.service"


def _runcmd(user_data: str) -> list[list[str]]:
    return libyaml_files.load(user_data)["runcmd"]


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
    expect = libyaml_files.load(node_files(user_data)["/etc/gpufleet/expect.json"]["content"])
    assert expect["instance_types"]["Standard_NC96ads_A100_v4"]["nvswitch"] is False  # the node check skips it


def test_types_with_and_without_nvswitches_cannot_share_a_group() -> None:
    mixed = {"p5.48xlarge": H100, "g6e.48xlarge": replace(H100, nvswitch=False)}
    with pytest.raises(BootstrapError, match=r"node group h100: instance types with NVSwitches \(p5.48xlarge\)"):
        config("aws", expected=mixed)


@pytest.mark.parametrize(("stack", "runs"), [(TRAIN, True), (INFER, False)])
def test_shipped_azure_stacks_start_it_on_nd_h100_only(stack: str, runs: bool) -> None:
    document = cloud_init(one(shipped(stack), VMSS))
    assert any(FM in command for command in document["runcmd"]) is runs


def _pci_node(tmp_path, classes: dict[str, tuple[str, str]]) -> Node:
    """A node of a group the catalog gives no NVSwitch, with these PCI functions (address -> vendor, class)."""
    pcie = {"ecs.ebmgn7e.32xlarge": replace(A100, nvswitch=False, fabric="none", fabric_interfaces=0)}
    node = Node(tmp_path, config("alicloud", expected=pcie))
    for address, (vendor, pci_class) in classes.items():
        device = tmp_path / "pci" / address
        device.mkdir(parents=True)
        (device / "vendor").write_text(f"{vendor}\n")
        (device / "class").write_text(f"{pci_class}\n")
    with (node.root / "etc/gpufleet/bootstrap.env").open("a") as settings:
        settings.write(f"GPUFLEET_SYS_PCI={tmp_path / 'pci'}\n")
    node.stub("systemctl", '[[ $1 == is-active ]] && exit 3; exit 0')  # inactive, as the image leaves it
    return node


def test_nvswitches_on_the_pci_bus_start_the_fabric_manager_whatever_the_catalog_says(tmp_path) -> None:
    # Before: only catalog NVSwitch groups started it, so an 8-GPU A100 row without the flag never had one and
    # every CUDA start failed with CUDA_ERROR_SYSTEM_NOT_READY.
    node = _pci_node(tmp_path, {"0000:07:00.0": ("0x10de", "0x068000"), "0000:18:00.0": ("0x10de", "0x030200")})
    assert node.run("gpufleet-health").returncode == 0
    assert f"systemctl start {FM}" in node.calls()
    assert "NVSwitch 0000:07:00.0 on the PCI bus: starting the fabric manager" in node.run("gpufleet-health").stderr


def test_a_bus_without_nvswitches_leaves_the_fabric_manager_off(tmp_path) -> None:
    # The GPUs (3D controller) and another vendor's bridge of the same class are not switches.
    node = _pci_node(tmp_path, {"0000:18:00.0": ("0x10de", "0x030200"), "0000:00:1f.0": ("0x8086", "0x068000")})
    assert node.run("gpufleet-health").returncode == 0
    assert not [c for c in node.calls() if c.startswith("systemctl")]
