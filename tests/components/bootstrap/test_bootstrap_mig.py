"""MIG at boot on the VM path: what a MIG group's user data carries (and a whole-GPU group's does not), the boot
script against a stub nvidia-smi (mode on, one reboot at most, devices on every GPU), and the layout the bootstrap
takes from a resolved stack."""

from __future__ import annotations

import copy
import json
import subprocess
from dataclasses import replace
from pathlib import Path

import libyaml_files
import pytest
from bootstrap_node import A100, Node, config, node_files, sent_user_data
from conftest import of_type, read_cluster, shellcheck, write_stack
from typer.testing import CliRunner

from components.bootstrap import BootstrapError, MigLayout, render_user_data
from components.bootstrap.cloud_init import MIG_DROP_IN
from components.bootstrap.for_group import group_bootstrap
from components.clouds.aws.lifecycle import COMPLETE_SECONDS
from components.clouds.hooks import BOOT_SECONDS, CHECK_RUN_SECONDS
from gpufleet.cli import app
from gpufleet.plan.planner import plan_stack
from gpufleet.resolve import resolve_cluster

BALANCED = MigLayout("all-balanced", {"3g.20gb": 1, "2g.10gb": 1, "1g.5gb": 2})
DROP_IN = "/etc/systemd/system/gpufleet-health.service.d/mig.conf"


def mig_config(cloud: str = "azure", layout: MigLayout = BALANCED, **changes: object):
    """A one-type A100 40 GB group whose GPUs get `layout`."""
    expected = {"Standard_ND96asr_v4": replace(A100, fabric="none", fabric_interfaces=0, mig_devices=layout.per_gpu)}
    return config(cloud, expected=expected, mig=layout, **changes)


# Rendering


def test_a_mig_group_carries_the_script_its_devices_and_the_count_to_check():
    files = node_files(render_user_data(mig_config()))
    assert "/usr/local/sbin/gpufleet-mig" in files
    assert files[DROP_IN]["content"] == MIG_DROP_IN
    assert "ExecStartPre=-/usr/local/sbin/gpufleet-mig" in MIG_DROP_IN.splitlines()
    settings = files["/etc/gpufleet/bootstrap.env"]["content"].splitlines()
    assert "GPUFLEET_MIG_DEVICES=3g.20gb,2g.10gb,1g.5gb,1g.5gb" in settings
    expect = json.loads(files["/etc/gpufleet/expect.json"]["content"])
    assert expect["instance_types"]["Standard_ND96asr_v4"]["mig_devices"] == 4


@pytest.mark.parametrize("cloud", ["aws", "azure", "alicloud"])
def test_a_whole_gpu_group_is_rendered_as_before(cloud):
    user_data = render_user_data(config(cloud))
    files = node_files(user_data)
    assert "/usr/local/sbin/gpufleet-mig" not in files and DROP_IN not in files
    assert "GPUFLEET_MIG" not in files["/etc/gpufleet/bootstrap.env"]["content"]
    expect = json.loads(files["/etc/gpufleet/expect.json"]["content"])
    assert all("mig_devices" not in e for e in expect["instance_types"].values())


def test_the_rendered_mig_script_is_shellcheck_clean(tmp_path):
    script = tmp_path / "gpufleet-mig"
    script.write_text(node_files(render_user_data(mig_config()))["/usr/local/sbin/gpufleet-mig"]["content"])
    result = subprocess.run([shellcheck(), "-s", "bash", str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def test_files_are_written_as_root_by_cloud_inits_default():
    document = libyaml_files.load(render_user_data(mig_config()))
    assert all("owner" not in entry for entry in document["write_files"])


@pytest.mark.parametrize(("changes", "message"), [
    ({"mig": None}, "mig_devices: the node check must count the 0 MIG devices"),
    ({"mig": MigLayout("all-balanced", {"3g.20gb": 1})}, "must count the 1 MIG devices"),
    ({"mig": MigLayout("balanced", {"3g.20gb": 1})}, "mig.profile"),
    ({"mig": MigLayout("all-balanced", {"1g.5gb": 8})}, "at most 7"),
])
def test_a_layout_and_an_expectation_that_disagree_are_refused(changes, message):
    with pytest.raises(BootstrapError, match=message):
        replace(mig_config(), **changes)


# The boot script on a stub nvidia-smi: $FAKE/mig holds each GPU's current and pending mode.

NVIDIA_SMI = r"""state=$FAKE/mig
case "$*" in
  "--query-gpu=mig.mode.current --format=csv,noheader") cat "$state/current" ;;
  "--query-gpu=mig.mode.pending --format=csv,noheader") cat "$state/pending" ;;
  "--query-gpu=index --format=csv,noheader") seq 0 $(($(wc -l < "$state/current") - 1)) ;;
  "-mig 1")
    case $(cat "$state/on_enable") in
      apply) sed 's/.*/Enabled/' "$state/current" > "$state/c" && mv "$state/c" "$state/current" ;;
      pending) sed 's/.*/Enabled/' "$state/pending" > "$state/p" && mv "$state/p" "$state/pending"; exit 1 ;;
      refuse) exit 3 ;;
    esac ;;
esac
exit 0
"""


def mig_node(tmp_path: Path, current: list[str], on_enable: str = "apply", rebooted: bool = False) -> Node:
    node = Node(tmp_path, mig_config())
    state = node.fake / "mig"
    state.mkdir()
    (state / "current").write_text("".join(f"{mode}\n" for mode in current))
    (state / "pending").write_text("".join(f"{mode}\n" for mode in current))
    (state / "on_enable").write_text(on_enable)
    node.stub("nvidia-smi", NVIDIA_SMI)
    node.stub("systemctl", "exit 0")
    node.stub("sleep", "exit 0")
    node.state = tmp_path / "state"
    if rebooted:
        node.state.mkdir()
        (node.state / "mig-rebooted").touch()
    return node


def run_mig(node: Node) -> subprocess.CompletedProcess[str]:
    return node.run("gpufleet-mig", GPUFLEET_STATE=str(node.state))


def created(node: Node) -> list[str]:
    return [c for c in node.calls() if c.startswith("nvidia-smi mig -i")]


def test_mig_already_on_creates_the_devices_on_every_gpu(tmp_path):
    node = mig_node(tmp_path, ["Enabled", "Enabled"], rebooted=True)
    result = run_mig(node)
    assert result.returncode == 0, result.stderr
    devices = "3g.20gb,2g.10gb,1g.5gb,1g.5gb"
    assert created(node) == [f"nvidia-smi mig -i {i} -cgi {devices} -C" for i in (0, 1)]
    calls = node.calls()
    assert "nvidia-smi -mig 1" not in calls and "systemctl reboot" not in calls
    # Leftovers go first, compute instances before GPU instances.
    assert calls.index("nvidia-smi mig -dci") < calls.index("nvidia-smi mig -dgi") < calls.index(created(node)[0])
    assert not (node.state / "mig-rebooted").exists(), "a reboot that worked clears its mark"


def test_mode_that_applies_at_once_needs_no_reboot(tmp_path):
    node = mig_node(tmp_path, ["Disabled", "Disabled"], on_enable="apply")
    assert run_mig(node).returncode == 0
    assert "nvidia-smi -mig 1" in node.calls() and "systemctl reboot" not in node.calls()
    assert len(created(node)) == 2


def test_mode_pending_until_a_reset_reboots_once_and_creates_nothing(tmp_path):
    node = mig_node(tmp_path, ["Disabled", "Enabled"], on_enable="pending")
    result = run_mig(node)
    assert result.returncode == 1  # only reached where the reboot did not stop the script
    assert "systemctl reboot" in node.calls() and "sleep infinity" in node.calls()
    assert (node.state / "mig-rebooted").exists()
    assert created(node) == []


def test_mode_still_pending_after_the_reboot_fails_without_another(tmp_path):
    node = mig_node(tmp_path, ["Disabled", "Disabled"], on_enable="pending", rebooted=True)
    result = run_mig(node)
    assert result.returncode == 1
    assert "MIG mode stays off" in result.stderr
    assert "systemctl reboot" not in node.calls() and created(node) == []


def test_mode_the_driver_refuses_fails_without_a_reboot(tmp_path):
    node = mig_node(tmp_path, ["Disabled"], on_enable="refuse")
    assert run_mig(node).returncode == 1
    assert "systemctl reboot" not in node.calls() and created(node) == []


def test_a_device_nvidia_smi_cannot_create_fails_the_script(tmp_path):
    node = mig_node(tmp_path, ["Enabled"])
    node.stub("nvidia-smi", NVIDIA_SMI.replace('esac\nexit 0\n', 'esac\n[[ $2 == -i ]] && exit 2\nexit 0\n'))
    assert run_mig(node).returncode == 1


# From the stack to the bootstrap


def _mig_cluster(stack: str, **group: object) -> dict:
    cluster = copy.deepcopy(read_cluster(stack))
    cluster["node_groups"][0].update(group)
    return cluster


def test_the_bootstrap_takes_the_groups_layout_from_the_catalog():
    resolved = resolve_cluster(_mig_cluster("aws-train-p5", rdma="off", instance_types=["p5.48xlarge", "p4de.24xlarge"],
                                            gpu_sharing={"mode": "mig", "mig_profile": "all-balanced"}))
    cfg = group_bootstrap(resolved, resolved.groups[0])
    assert cfg.mig == MigLayout("all-balanced", {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2})
    assert {t: e.mig_devices for t, e in cfg.expected.items()} == {"p5.48xlarge": 4, "p4de.24xlarge": 4}


def test_a_whole_gpu_group_gets_no_layout():
    resolved = resolve_cluster(read_cluster("aws-train-p5"))
    cfg = group_bootstrap(resolved, resolved.groups[0])
    assert cfg.mig is None and all(e.mig_devices == 0 for e in cfg.expected.values())


@pytest.mark.parametrize(("stack", "group"), [
    # AWS's user data cap (16 KB) with GPU metrics, lifecycle hooks and two types: the largest MIG group.
    ("aws-train-p5", {"rdma": "off", "instance_types": ["p5.48xlarge", "p4de.24xlarge"],
                      "gpu_sharing": {"mode": "mig", "mig_profile": "all-balanced"}}),
    ("azure-infer-a100", {"gpu_sharing": {"mode": "mig", "mig_profile": "all-1g.10gb"}}),
])
def test_a_mig_stack_plans(stacks_dir, stack, group):
    write_stack(stacks_dir, "mig", _mig_cluster(stack, **group))
    result = CliRunner().invoke(app, ["plan", "--stack", "mig", "--stacks-dir", str(stacks_dir), "--format", "json"])
    assert result.exit_code == 0, result.output


def test_a_mig_node_boots_twice_inside_the_aws_launch_hold(stacks_dir):
    """The first boot reboots once: the boot check's retries fit what the hold leaves after two boots."""
    write_stack(stacks_dir, "mig", _mig_cluster("aws-train-p5", rdma="off",
                                                gpu_sharing={"mode": "mig", "mig_profile": "all-1g.10gb"}))
    plan = plan_stack(stacks_dir / "Pulumi.mig.yaml", stacks_dir)
    (hook,) = [r for r in of_type(plan, "aws:autoscaling/lifecycleHook:LifecycleHook")
               if r.inputs["lifecycleTransition"] == "autoscaling:EC2_INSTANCE_LAUNCHING"]
    for template in of_type(plan, "aws:ec2/launchTemplate:LaunchTemplate"):
        files = node_files(sent_user_data(template.inputs["userData"]))
        settings = dict(line.split("=", 1) for line in files["/etc/gpufleet/bootstrap.env"]["content"].splitlines()
                        if "=" in line and not line.startswith("#"))
        retry = int(settings["GPUFLEET_NODECHECK_RETRY_SECONDS"])
        assert retry > 0
        assert 2 * BOOT_SECONDS + retry + CHECK_RUN_SECONDS + COMPLETE_SECONDS <= hook.inputs["heartbeatTimeout"]
