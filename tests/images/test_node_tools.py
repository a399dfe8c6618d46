"""The image carries every command the node scripts run: the rendered node scripts of every cloud, parsed with
shfmt, against gpufleet/lock/node_tools.py (the image check that enforces it on a bake: test_image_check.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import libyaml_files
import pytest
from bootstrap_node import config, node_files
from conftest import REPO
from shell_commands import commands, node_commands

from components.bootstrap import MigLayout, gate_command
from components.bootstrap.cloud_init import render_cloud_config
from components.bootstrap.operations import GpuMetrics
from components.slurm.site import CONFIGLESS_CONF_DIR
from components.slurm.spot_leave import render_spot_leave
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
    """User data with every optional script the cloud can render: GPU metrics, scratch, MIG, Slurm's spot leave and
    the cloud's own."""
    # A MIG group never uses RDMA, and its types share one MIG layout: on AWS two at most (p5 and p4de).
    mig = MigLayout("all-balanced", {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2})
    expected = {name: replace(e, fabric="none", fabric_interfaces=0, mig_devices=mig.per_gpu)
                for name, e in list(config(cloud).expected.items())[:2]}
    # Not a combination a cloud renders (MIG under Slurm is refused), so past the user-data cap: the document only.
    return render_cloud_config(config(cloud, gpu_metrics=GpuMetrics("gpufleet", "train-h100", "r"), mig=mig,
                                      expected=expected, slurm_leave=render_spot_leave(CONFIGLESS_CONF_DIR),
                                      **CLOUD_OPTIONS[cloud]))


def _node_needs(cloud: str) -> set[str]:
    user_data = _everything_on(cloud)
    files = node_files(user_data)
    shell = [e["content"] for e in files.values() if e["content"].startswith(("#!/bin/bash", "# shellcheck shell="))]
    settings = dict(line.split("=", 1) for line in files["/etc/gpufleet/bootstrap.env"]["content"].splitlines()
                    if "=" in line and not line.startswith("#"))
    needed, unresolved = node_commands(shell, cloud, settings)
    assert unresolved == []
    needed |= commands(gate_command(60)).external  # what the scale-out gate runs on the node
    document = libyaml_files.load(user_data)
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
