"""The image check as each cloud's plan renders it (AWS's validate and test phases, Azure's in-VM validator, Alibaba's
last component), run with bash over the real bundle and a PATH of stubs: any failing piece fails the whole check,
which names the kernel it checks (the one kernel.sh recorded, the only one in /boot)."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import libyaml_files
import pytest
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
        phases = libyaml_files.load(install.inputs["data"])["phases"]
        return [command for phase in phases if phase["name"] in ("validate", "test")
                for step in phase["steps"] for command in step["inputs"]["commands"]]
    if cloud == "azure":
        template = one(plan, "azure-native:virtualmachineimages:VirtualMachineImageTemplate")
        return ["\n".join(check["inline"]) for check in template.inputs["validate"]["inVMValidations"]]
    components = of_type(plan, "alicloud:ecs/ecsImageComponent:EcsImageComponent")
    last = [r for r in components if r.name.endswith("-install")][0]
    return [last.inputs["content"].splitlines()[-1].removeprefix("RUN ")]


def _slurm(root: Path, slurmd: str, plugstack: str, munge_key: bool) -> dict[str, str]:
    """What slurm.sh leaves on an image (plugstack.conf, the pyxis version, a munge key only if `munge_key`), and the
    stubs of slurmd -V (answering `slurmd`) and enroot version (answering the lock's)."""
    pins = load_lock().profiles["cuda12.8-r580"].slurm
    assert pins is not None
    (root / "etc/slurm").mkdir(parents=True)
    (root / "etc/slurm/plugstack.conf").write_text(plugstack)
    (root / "etc/gpufleet/pyxis-version").write_text(f"{pins.pyxis.version}\n")
    if munge_key:
        (root / "etc/munge").mkdir(parents=True)
        (root / "etc/munge/munge.key").write_bytes(b"k" * 1024)
    return {"slurmd": f'[[ $1 == -V ]] && echo "{slurmd}"',
            "enroot": f"[[ $1 == version ]] && echo {pins.enroot.version}"}


def _image(tmp_path: Path, cloud: str, missing: set[str] = frozenset(), kernels: tuple[str, ...] = (KERNEL,),
           running: str = KERNEL, slurmd: str = "slurm 25.11.5",
           plugstack: str = "required /usr/local/lib/slurm/spank_pyxis.so\n",
           munge_key: bool = False) -> tuple[Path, dict[str, str]]:
    """The unpacked bundle, a root with the recorded boot kernel and `kernels` in /boot, and stubs: modinfo knows
    every module for KERNEL but those `missing`, and each node command but those `missing` is on PATH; Slurm's pieces
    as `_slurm` leaves them."""
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
    stubs |= {name: body for name, body in _slurm(root, slurmd, plugstack, munge_key).items() if name not in missing}
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


@pytest.mark.parametrize("cloud", list(STACKS))
def test_the_check_names_the_slurm_enroot_and_pyxis_it_found(tmp_path, shipped_plans, cloud):
    for done in _check(tmp_path, shipped_plans, cloud):
        assert done.returncode == 0, done.stderr
        assert "gpufleet image check: Slurm 25.11.5, pyxis 0.24.0, enroot 4.1.2" in done.stdout


@pytest.mark.parametrize(("image", "message"), [
    ({"slurmd": "slurm 22.05.8"}, "slurmd -V says 'slurm 22.05.8', the lock pins Slurm 25.11.5"),
    ({"plugstack": "include /etc/slurm/plugstack.conf.d/*\n"}, "/etc/slurm/plugstack.conf does not load pyxis"),
    ({"munge_key": True}, "/etc/munge/munge.key is baked into the image"),
])
def test_a_slurm_piece_off_the_lock_fails_the_check(tmp_path, shipped_plans, image, message):
    for done in _check(tmp_path, shipped_plans, "aws", **image):
        assert done.returncode == 1 and f"gpufleet image check: {message}" in done.stderr
