"""The image carries every command the node scripts run: the rendered node scripts of every cloud,
parsed with shfmt, against gpufleet/lock/node_tools.py, and the image check that enforces it on a bake."""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from bootstrap_node import config, node_files
from conftest import REPO
from shell_commands import commands, node_commands

from components.bootstrap import MigLayout, gate_command, render_user_data
from components.bootstrap.operations import GpuMetrics
from gpufleet.lock import load_lock, render_install_env
from gpufleet.lock.bundle import BUNDLE_DIR, IMAGE_CHECK
from gpufleet.lock.node_tools import BASE_OS, INSTALLED, installed_tools

INSTALL = REPO / "images" / "install"
CLOUDS = ("aws", "azure", "alicloud")


# The optional scripts each cloud's cluster can turn on (clouds/C/cluster.py): the health endpoint is Azure's, the
# ERI MTU and the metadata guard Alibaba's. A combination no cloud renders would only test the user-data cap.
CLOUD_OPTIONS: dict[str, dict[str, object]] = {
    "aws": {},
    "azure": {"health_port": 8080},
    "alicloud": {"fabric_mtu": 8500, "metadata_guard": True},
}


def _everything_on(cloud: str) -> str:
    """User data with every optional script the cloud can render: GPU metrics, scratch, MIG and the cloud's own."""
    # A MIG group never uses RDMA, and its types share one MIG layout: on AWS two at most (p5 and p4de).
    mig = MigLayout("all-balanced", {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2})
    expected = {name: replace(e, fabric="none", fabric_interfaces=0, mig_devices=mig.per_gpu)
                for name, e in list(config(cloud).expected.items())[:2]}
    return render_user_data(config(cloud, gpu_metrics=GpuMetrics("gpufleet", "train-h100", "r"), mig=mig,
                                   expected=expected, **CLOUD_OPTIONS[cloud]))


def _node_needs(cloud: str) -> set[str]:
    user_data = _everything_on(cloud)
    files = node_files(user_data)
    shell = [e["content"] for e in files.values() if e["content"].startswith(("#!/bin/bash", "# shellcheck shell="))]
    needed, unresolved = node_commands(shell, cloud)
    assert unresolved == []
    needed |= commands(gate_command(60)).external  # what the scale-out gate runs on the node
    document = yaml.safe_load(user_data)
    needed |= {argv[0] for argv in document["runcmd"]}
    for entry in files.values():  # interpreters of the scripts and what the units start
        first = entry["content"].splitlines()[0]
        if first.startswith("#!"):
            needed.add(Path(first[2:].split()[0]).name)
        needed |= {line.split("=", 1)[1].split()[0] for line in entry["content"].splitlines()
                   if line.startswith("ExecStart=")}
    # The node's own scripts are written by the user data itself.
    return needed - set(files)


@pytest.mark.parametrize("cloud", CLOUDS)
def test_every_command_a_node_script_runs_is_on_the_image(cloud):
    missing = _node_needs(cloud) - installed_tools(cloud)
    assert not missing, f"{cloud}: node scripts run {sorted(missing)}, which neither the base image nor " \
                        "images/install provides (gpufleet/lock/node_tools.py)"


def test_mig_groups_need_nvidia_smi():
    assert {"nvidia-smi", "awk", "systemctl", "sleep"} <= _node_needs("azure")
    assert "/usr/local/sbin/gpufleet-mig" in node_files(_everything_on("azure"))


def test_aws_nodes_need_the_cli_and_the_agent():
    assert {"aws", "/opt/aws/amazon-cloudwatch-agent/bin/amazon-cloudwatch-agent-ctl"} <= _node_needs("aws")
    assert "aws" not in _node_needs("azure") and "aliyun" in _node_needs("alicloud")


@pytest.mark.parametrize(("cloud", "tool"), [(c, t) for c, tools in INSTALLED.items() for t in tools])
def test_each_installed_tool_is_installed_by_the_script_named(cloud, tool):
    script, evidence = INSTALLED[cloud][tool]
    assert evidence in (INSTALL / script).read_text(), f"{tool}: {script} no longer installs it"


def test_no_base_tool_is_claimed_twice():
    for tools in INSTALLED.values():
        assert not set(tools) & set(BASE_OS)


def _image_check(tmp_path: Path, cloud: str, tools: set[str], lustre: bool) -> subprocess.CompletedProcess[str]:
    """IMAGE_CHECK under bash with the bundle's pins and a PATH holding exactly `tools` (and modinfo)."""
    tmp_path = Path(tempfile.mkdtemp(dir=tmp_path))
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "pins.env").write_text(render_install_env(load_lock().profiles["cuda12.8-r580"], cloud))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    modules = "nvidia lustre" if lustre else "nvidia"
    stubs = {"modinfo": f'[[ " {modules} " == *" $1 "* ]]'} | {Path(t).name: "exit 0" for t in tools}
    for name, body in stubs.items():
        (bin_dir / name).write_text(f"#!/bin/bash\n{body}\n")
        (bin_dir / name).chmod(0o755)
    # Absolute tools (the CloudWatch agent's ctl) are looked up by path: point them into the stub directory.
    script = IMAGE_CHECK.replace(BUNDLE_DIR, str(bundle))
    lines = "\n".join(f"set -e; {line}" for line in script.splitlines())
    pins = (bundle / "pins.env").read_text()
    for tool in INSTALLED[cloud]:
        if tool.startswith("/"):
            pins = pins.replace(tool, str(bin_dir / Path(tool).name))
    (bundle / "pins.env").write_text(pins)
    return subprocess.run(["/bin/bash", "-c", lines], env={"PATH": str(bin_dir)}, capture_output=True, text=True,
                          check=False)


@pytest.mark.parametrize("cloud", CLOUDS)
def test_image_check_passes_an_image_with_every_tool(tmp_path, cloud):
    done = _image_check(tmp_path, cloud, installed_tools(cloud), lustre=True)
    assert done.returncode == 0, done.stderr


def test_image_check_fails_a_bake_without_the_aws_cli(tmp_path):
    done = _image_check(tmp_path, "aws", installed_tools("aws") - {"aws"}, lustre=True)
    assert done.returncode == 1
    assert "gpufleet image check: aws is missing" in done.stderr


def test_image_check_fails_an_aws_bake_without_lustre_modules(tmp_path):
    assert _image_check(tmp_path, "aws", installed_tools("aws"), lustre=False).returncode != 0
    assert _image_check(tmp_path, "azure", installed_tools("azure"), lustre=False).returncode == 0
