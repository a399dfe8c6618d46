"""The image check as each cloud's plan renders it (AWS's validate and test phases, Azure's in-VM validator, Alibaba's
last component), run with bash over the real bundle and a PATH of stubs: any failing piece fails the whole check,
which names the kernel it checks (the one kernel.sh recorded, the only one in /boot)."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import of_type, one

from gpufleet.lock import load_lock
from gpufleet.lock.bundle import BUNDLE_DIR, pack
from gpufleet.lock.node_tools import installed_tools

KERNEL = "5.15.0-1089-azure"
MODULES = {"aws": ("nvidia", "efa", "lustre"), "azure": ("nvidia", "mlx5_ib", "nvidia-peermem", "lustre"),
           "alicloud": ("nvidia", "erdma")}
STACKS = {"aws": "aws-images", "azure": "azure-images", "alicloud": "alicloud-images"}


def rendered_checks(plan: Any, cloud: str) -> list[str]:
    """The image check commands the stack registers, as the cloud runs them."""
    if cloud == "aws":
        (install,) = [r for r in of_type(plan, "aws:imagebuilder/component:Component") if r.name.endswith("-install")]
        phases = yaml.safe_load(install.inputs["data"])["phases"]
        return [command for phase in phases if phase["name"] in ("validate", "test")
                for step in phase["steps"] for command in step["inputs"]["commands"]]
    if cloud == "azure":
        template = one(plan, "azure-native:virtualmachineimages:VirtualMachineImageTemplate")
        return ["\n".join(check["inline"]) for check in template.inputs["validate"]["inVMValidations"]]
    components = of_type(plan, "alicloud:ecs/ecsImageComponent:EcsImageComponent")
    last = [r for r in components if r.name.endswith("-install")][0]
    return [last.inputs["content"].splitlines()[-1].removeprefix("RUN ")]


def _image(tmp_path: Path, cloud: str, missing: set[str] = frozenset(), kernels: tuple[str, ...] = (KERNEL,),
           running: str = KERNEL) -> tuple[Path, dict[str, str]]:
    """The unpacked bundle, a root with the recorded boot kernel and `kernels` in /boot, and stubs: modinfo knows
    every module for KERNEL but those `missing`, and each node command but those `missing` is on PATH."""
    profile = load_lock().profiles["cuda12.8-r580"]
    bundle, root, bin_dir = tmp_path / "bundle", tmp_path / "root", tmp_path / "bin"
    with tarfile.open(fileobj=io.BytesIO(pack(profile, cloud))) as archive:
        archive.extractall(bundle, filter="data")
    (root / "etc/gpufleet").mkdir(parents=True)
    (root / "etc/gpufleet/boot-kernel").write_text(f"{KERNEL}\n")
    (root / "boot").mkdir()
    for kernel in kernels:
        (root / "boot" / f"vmlinuz-{kernel}").touch()
    bin_dir.mkdir()
    known = " ".join(m for m in MODULES[cloud] if m not in missing)
    stubs = {"modinfo": f'[[ $1 == -k && $2 == {KERNEL} && " {known} " == *" $3 "* ]]', "uname": f"echo {running}"}
    stubs |= {Path(tool).name: "exit 0" for tool in installed_tools(cloud) - missing - {"bash"}}
    for name, body in stubs.items():
        (bin_dir / name).write_text(f"#!/bin/bash\n{body}\n")
        (bin_dir / name).chmod(0o755)
    (bin_dir / "bash").symlink_to("/bin/bash")  # what each check runs the script with
    # Absolute tools (the CloudWatch agent's ctl) are looked up by path: point them into the stub directory.
    pins = (bundle / "pins.env").read_text()
    for tool in installed_tools(cloud):
        if tool.startswith("/"):
            pins = pins.replace(tool, str(bin_dir / Path(tool).name))
    (bundle / "pins.env").write_text(pins)
    return bundle, {"PATH": str(bin_dir), "GPUFLEET_ROOT": str(root)}


def _check(tmp_path: Path, plans: dict[str, Any], cloud: str, **image: Any) -> list[subprocess.CompletedProcess[str]]:
    """Every rendered check of `cloud`'s image stack, run under /bin/bash on the image described."""
    bundle, env = _image(tmp_path, cloud, **image)
    checks = rendered_checks(plans[STACKS[cloud]], cloud)
    assert checks
    return [subprocess.run(["/bin/bash", "-c", check.replace(BUNDLE_DIR, str(bundle))], env=env, capture_output=True,
                           text=True, check=False) for check in checks]


@pytest.mark.parametrize("cloud", list(STACKS))
def test_the_rendered_check_passes_a_complete_image_and_names_its_kernel(tmp_path, shipped_plans, cloud):
    for done in _check(tmp_path, shipped_plans, cloud):
        assert done.returncode == 0, done.stderr
        assert f"gpufleet image check: kernel {KERNEL}" in done.stdout


@pytest.mark.parametrize("cloud", ["aws", "azure"])
def test_a_modinfo_failing_for_nvidia_fails_the_rendered_validators(tmp_path, shipped_plans, cloud):
    for done in _check(tmp_path, shipped_plans, cloud, missing={"nvidia"}):
        assert done.returncode == 1
        assert f"kernel {KERNEL} has no nvidia module" in done.stderr


@pytest.mark.parametrize(("cloud", "module"), [("aws", "efa"), ("aws", "lustre"), ("azure", "mlx5_ib"),
                                               ("azure", "nvidia-peermem"), ("azure", "lustre"),
                                               ("alicloud", "erdma"), ("alicloud", "nvidia")])
def test_each_module_the_nodes_need_is_checked_for_the_boot_kernel(tmp_path, shipped_plans, cloud, module):
    for done in _check(tmp_path, shipped_plans, cloud, missing={module}):
        assert done.returncode == 1 and f"kernel {KERNEL} has no {module} module" in done.stderr


@pytest.mark.parametrize(("cloud", "tool"), [("aws", "mount.lustre"), ("azure", "mount.lustre"), ("aws", "aws"),
                                             ("alicloud", "aliyun")])
def test_a_missing_node_command_fails_the_check(tmp_path, shipped_plans, cloud, tool):
    for done in _check(tmp_path, shipped_plans, cloud, missing={tool}):
        assert done.returncode == 1 and f"gpufleet image check: {tool} is missing" in done.stderr


@pytest.mark.parametrize("cloud", list(STACKS))
def test_a_second_kernel_in_boot_fails_the_check(tmp_path, shipped_plans, cloud):
    for done in _check(tmp_path, shipped_plans, cloud, kernels=(KERNEL, "6.8.0-1041-azure")):
        assert done.returncode == 1 and f"kernel 6.8.0-1041-azure is in /boot beside {KERNEL}" in done.stderr


def test_an_aws_instance_that_booted_another_kernel_fails_validate_and_test(tmp_path, shipped_plans):
    results = _check(tmp_path, shipped_plans, "aws", running="6.8.0-1041-aws")
    assert len(results) == 2  # validate on the build instance after its reboot, test on a fresh instance
    for done in results:
        assert done.returncode == 1 and f"runs kernel 6.8.0-1041-aws, not the image's kernel {KERNEL}" in done.stderr
