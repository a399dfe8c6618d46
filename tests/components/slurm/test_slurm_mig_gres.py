"""MIG devices as Slurm GRES: the served gres.conf includes each node's own, the node registers its MIG devices per
type (the profile's devices on every GPU), and its boot writes the MultipleFiles lines from NVML and mig-minors
(components/bootstrap/scripts/slurm-gres.py, here with the fake NVML and a mig-minors fixture)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from types import SimpleNamespace

import libyaml_files
import pytest
from conftest import one, write_stack
from fake_mig import SLURM_GRES, mig_nvml, slurm_gres_script
from slurm_daemons import site_in
from slurm_stacks import cloud_config, files_of, slurm_cluster

from components.bootstrap.cloud_init import node_script
from components.bootstrap.for_group import mig_layout
from components.slurm.gres_conf import node_gres_plan
from components.slurm.head_files import head_node_files, head_site
from components.slurm.node_files import MIG_GRES_UNCONFIRMED, node_join_files
from components.slurm.registration import slurmd_registration
from gpufleet.plan.planner import PlanResult, plan_stack
from gpufleet.resolve import resolve_cluster


def _mig_group(stack: str, profile: str):  # noqa: ANN202 - a ResolvedGroup
    raw = slurm_cluster(stack)
    raw["node_groups"][0].update(rdma="off", gpu_sharing={"mode": "mig", "mig_profile": profile})
    return resolve_cluster(raw).groups[0]


@pytest.mark.parametrize(("stack", "profile", "gres"), [
    ("aws-train-p5", "all-1g.10gb", "Gres=gpu:1g.10gb:56"),
    ("azure-train-ndh100", "all-balanced", "Gres=gpu:3g.40gb:8,gpu:2g.20gb:8,gpu:1g.10gb:16"),
])
def test_a_mig_node_registers_its_devices_per_type(stack: str, profile: str, gres: str) -> None:
    group = _mig_group(stack, profile)
    instance = group.known_types[0]
    conf = slurmd_registration(group, instance, group.zones[0], "n1")[-1]
    assert conf.split()[0] == gres
    plan = json.loads(node_join_files(group, head_site(), stack.split("-")[0], "10.0.0.9", {})[
        "/etc/gpufleet/slurm-gres.json"][1])
    counts = dict(item.split(":")[1:] for item in gres.removeprefix("Gres=").split(","))
    assert plan == {"path": "/etc/gpufleet/slurm-gres.conf", "device_dir": "/dev",
                    "types": {instance.name: {"mig": {kind: int(n) for kind, n in counts.items()}}}}


def test_the_served_gres_conf_includes_the_nodes_own_and_the_head_carries_it_empty() -> None:
    site = head_site()
    files = head_node_files(resolve_cluster(slurm_cluster()), site)
    assert files["/etc/slurm/gres.conf"] == ("0644", "Include /etc/gpufleet/slurm-gres.conf\n")
    assert files["/etc/gpufleet/slurm-gres.conf"] == ("0644", "")


def test_a_whole_gpu_node_writes_its_types_line(tmp_path: Path) -> None:
    group = resolve_cluster(slurm_cluster()).groups[0]
    plan = json.loads(node_gres_plan(group, mig_layout(group), site_in(tmp_path, "true")))
    assert slurm_gres_script().node_gres(plan, "p5.48xlarge") == f"Name=gpu Type=h100 File={tmp_path}/dev/nvidia[0-7]\n"


# A few lines of mig-minors of GPUs 0 and 1.
MIG_MINORS = """\
config 1
monitor 2
gpu0/gi1/access 12
gpu0/gi1/ci0/access 13
gpu0/gi2/access 21
gpu0/gi2/ci0/access 22
gpu1/gi1/access 147
gpu1/gi1/ci0/access 148
gpu1/gi2/access 156
gpu1/gi2/ci0/access 157
"""


def _plan(tmp_path: Path, counts: dict[str, int]) -> dict:
    return {"path": str(tmp_path / "slurm-gres.conf"), "device_dir": "/dev", "types": {"p5.48xlarge": {"mig": counts}}}


def test_a_mig_node_writes_each_device_with_its_capability_files(tmp_path: Path) -> None:
    minors = tmp_path / "mig-minors"
    minors.write_text(MIG_MINORS)
    nvml = mig_nvml({0: [(1, 0, 1, 9856), (2, 0, 1, 9856)], 1: [(1, 0, 1, 9856), (2, 0, 1, 9856)]})
    text = slurm_gres_script().node_gres(_plan(tmp_path, {"1g.10gb": 4}), "p5.48xlarge", nvml, str(minors))
    assert text == (
        "Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap12,/dev/nvidia-caps/nvidia-cap13\n"
        "Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap21,/dev/nvidia-caps/nvidia-cap22\n"
        "Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap147,"
        "/dev/nvidia-caps/nvidia-cap148\n"
        "Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap156,"
        "/dev/nvidia-caps/nvidia-cap157\n")


def test_a_node_whose_mig_devices_differ_writes_nothing_and_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    minors = tmp_path / "mig-minors"
    minors.write_text(MIG_MINORS)
    script = slurm_gres_script()
    # One GPU's devices missing (mig.sh failed there): three of the four the node registers.
    nvml = mig_nvml({0: [(1, 0, 1, 9856), (2, 0, 1, 9856)], 1: [(1, 0, 1, 9856)]})
    plan = _plan(tmp_path, {"1g.10gb": 4})
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    reads = script.node_gres
    monkeypatch.setattr(script, "node_gres", lambda p, t: reads(p, t, nvml, str(minors)))  # main's call, the fakes
    assert script.main(["gpufleet-slurm-gres", str(tmp_path / "plan.json"), "p5.48xlarge"]) == 1
    assert capsys.readouterr().err == (
        "gpufleet-slurm-gres: MIG devices {'1g.10gb': 3}, the node registers {'1g.10gb': 4}\n")
    assert not (tmp_path / "slurm-gres.conf").exists()


def _node_files(plan: PlanResult) -> dict[str, str]:
    """The files of the one node group's registered user data (AWS's launch template, Azure's scale set)."""
    if plan.cloud == "aws":
        return files_of(cloud_config(one(plan, "aws:ec2/launchTemplate:LaunchTemplate").inputs["userData"]))
    vmss = one(plan, "azure-native:compute:VirtualMachineScaleSet")
    custom_data = vmss.inputs["virtualMachineProfile"]["osProfile"]["customData"]
    return files_of(libyaml_files.load(base64.b64decode(custom_data)))


@pytest.mark.parametrize(("stack", "gres"), [
    ("aws-train-p5", "Gres=gpu:1g.10gb:56"),
    ("azure-train-ndh100", "Gres=gpu:1g.10gb:56"),
])
def test_a_mig_groups_plan_registers_its_devices_and_writes_them_at_boot(stack: str, gres: str, tmp_path: Path) -> None:
    raw = slurm_cluster(stack)
    raw["node_groups"][0].update(rdma="off", gpu_sharing={"mode": "mig", "mig_profile": "all-1g.10gb"})
    planned = plan_stack(write_stack(tmp_path, "slurm-mig", raw))
    assert f"node_groups[0].gpu_sharing: {MIG_GRES_UNCONFIRMED}" in planned.summary["warnings"]
    files = _node_files(planned)
    assert f'--conf "{gres} ' in files["/etc/gpufleet/slurmd-registration"]
    plan = json.loads(files["/etc/gpufleet/slurm-gres.json"])
    assert [entry["mig"] for entry in plan["types"].values()] == [{"1g.10gb": 56}]
    assert files["/usr/local/sbin/gpufleet-slurm-gres"] == SLURM_GRES.read_text()
    # The boot partitions the GPUs before the node check, which the join runs after.
    assert files["/usr/local/sbin/gpufleet-mig"] == node_script("mig.sh")


@pytest.mark.parametrize(("gpu_bytes", "device_mb", "slices", "named"), [
    # An H200 (tests/data/device/h200-mig-lgip.txt): 1g.18gb is 16.00 GiB and 1g.35gb 32.50 GiB; the GPU holds at
    # least its 7g.141gb device's 140.00 GiB. Rounding the device's own GiB (Slurm's gpu_nvml.c) would say 1g.16gb.
    (140 * 2**30, 16384, 1, "1g.18gb"),
    (140 * 2**30, 33280, 1, "1g.35gb"),
    (80 * 2**30, 9856, 1, "1g.10gb"),
])
def test_a_mig_device_is_named_as_mig_parted_names_its_profile(gpu_bytes: int, device_mb: int, slices: int,
                                                                named: str) -> None:
    attributes = SimpleNamespace(gpuInstanceSliceCount=slices, computeInstanceSliceCount=slices,
                                 memorySizeMB=device_mb)
    assert slurm_gres_script().mig_type(attributes, gpu_bytes) == named


def test_a_device_missing_from_mig_minors_is_named(tmp_path: Path) -> None:
    minors = tmp_path / "mig-minors"
    minors.write_text(MIG_MINORS)
    nvml = mig_nvml({0: [(3, 0, 1, 9856)]})  # GPU instance 3: not in the fixture
    with pytest.raises(ValueError, match="^gpu0/gi3/access is not in mig-minors$"):
        slurm_gres_script().node_gres(_plan(tmp_path, {"1g.10gb": 1}), "p5.48xlarge", nvml, str(minors))
