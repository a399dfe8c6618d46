"""Bootstrap user data: rendering, expect.json, settings, size limits and shellcheck."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace

import libyaml_files
import pytest
import yaml
from bootstrap_node import H100, LIFECYCLE, config, install, node_files
from conftest import shellcheck

from components.bootstrap import (
    BootstrapError,
    render_user_data,
    user_data_limit,
)


@pytest.mark.parametrize("cloud", ["aws", "azure", "alicloud"])
def test_render_is_deterministic(cloud):
    assert render_user_data(config(cloud)) == render_user_data(config(cloud))


@pytest.mark.parametrize("cloud", ["aws", "azure", "alicloud"])
@pytest.mark.parametrize("changes", [{}, {"scratch": "none", "scratch_mount": ""}, {"checkpoint_hook": "a: 'b'\n\tc"}])
def test_libyaml_emitter_writes_the_bytes_of_the_pure_one(monkeypatch, cloud, changes):
    from components.bootstrap import cloud_init as render

    fast = render_user_data(config(cloud, **changes))
    monkeypatch.setattr(render, "_LiteralDumper", render._literal_dumper(yaml.SafeDumper))
    assert render_user_data(config(cloud, **changes)) == fast


def test_p5_group_with_three_fallbacks_fits_the_limit():
    user_data = render_user_data(config("aws"))
    assert len(config("aws").expected) == 4
    assert len(user_data.encode()) < user_data_limit("aws") == 16384


@pytest.mark.parametrize("cloud", ["aws", "azure", "alicloud"])
def test_expect_json_parses_back_to_the_config(cloud):
    cfg = config(cloud)
    expect = json.loads(node_files(render_user_data(cfg))["/etc/gpufleet/expect.json"]["content"])
    assert expect == {
        "profile": "cuda12.8-r570",
        "driver": "570.133.20",
        "cuda": "12.8",
        "fabric_manager": "570.133.20",
        "scratch_mount": "/scratch",
        "instance_types": {
            name: {
                "gpu_model": e.gpu_model,
                "gpu_count": e.gpu_count,
                "nvswitch": e.nvswitch,
                "fabric": e.fabric,
                "fabric_interfaces": e.fabric_interfaces,
            }
            for name, e in cfg.expected.items()
        },
    }
    text = node_files(render_user_data(cfg))["/etc/gpufleet/expect.json"]["content"]
    assert text == json.dumps(expect, indent=2, sort_keys=True) + "\n"


def test_no_scratch_writes_null_mount_and_no_scratch_unit():
    files = node_files(render_user_data(config("azure", scratch="none", scratch_mount="")))
    assert json.loads(files["/etc/gpufleet/expect.json"]["content"])["scratch_mount"] is None
    assert "/usr/local/sbin/gpufleet-scratch" not in files
    assert "/etc/systemd/system/gpufleet-scratch.service" not in files


def test_aws_render_carries_lifecycle_names_and_results():
    user_data = render_user_data(config("aws"))
    settings = node_files(user_data)["/etc/gpufleet/bootstrap.env"]["content"]
    for line in (
        "GPUFLEET_SCALING_GROUP=train-h100-asg",
        "GPUFLEET_LAUNCH_HOOK=train-h100-launch",
        "GPUFLEET_TERMINATE_HOOK=train-h100-terminate",
        "GPUFLEET_REGION=us-east-1",
        "GPUFLEET_CHECKPOINT_GRACE_SECONDS=300",
    ):
        assert line in settings.splitlines()
    scripts = "\n".join(entry["content"] for entry in node_files(user_data).values())
    for word in ("complete-lifecycle-action", "CONTINUE", "ABANDON", "X-aws-ec2-metadata-token"):
        assert word in scripts


def test_runcmd_enables_and_starts_every_unit():
    document = libyaml_files.load(render_user_data(config("aws")))
    # p5 and its fallbacks have NVSwitches: the fabric manager (disabled in the image) starts before the node check.
    units = ["gpufleet-scratch.service", "nvidia-fabricmanager.service", "gpufleet-health.service",
             "gpufleet-spot-watcher.service"]
    assert document["runcmd"] == [
        ["systemctl", "daemon-reload"],
        ["systemctl", "enable", *units],
        ["systemctl", "start", "--no-block", *units],
    ]


def test_settings_quote_hostile_values_for_the_shell(tmp_path):
    hook = "echo $HOME; touch /tmp/pwned `id` 'q' \"d\""  # machine-path-ok: a hostile hook string
    cfg = config("azure", checkpoint_hook=hook, cluster="a'b")
    root = install(render_user_data(cfg), tmp_path)
    printed = subprocess.run(
        [
            "bash",
            "-c",
            '. "$1"; printf "%s\\n" "$GPUFLEET_CHECKPOINT_HOOK" "$GPUFLEET_CLUSTER"',
            "_",
            str(root / "etc/gpufleet/bootstrap.env"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert printed.stdout.splitlines() == [hook, "a'b"]


@pytest.mark.parametrize("cloud", ["aws", "azure", "alicloud"])
def test_every_shell_part_is_shellcheck_clean(cloud, tmp_path):
    files = node_files(render_user_data(config(cloud)))
    shell = {
        p: e for p, e in files.items() if e["content"].startswith(("#!/bin/bash", "# shellcheck shell=bash"))
    }
    assert set(shell) == {
        "/etc/gpufleet/bootstrap.env",
        "/usr/local/lib/gpufleet/common.sh",
        "/usr/local/sbin/gpufleet-health",
        "/usr/local/sbin/gpufleet-spot-watcher",
        "/usr/local/sbin/gpufleet-scratch",
    }
    for index, (path, entry) in enumerate(sorted(shell.items())):
        script = tmp_path / f"{index}.sh"
        script.write_text(entry["content"])
        result = subprocess.run([shellcheck(), "-s", "bash", str(script)], capture_output=True, text=True)
        assert result.returncode == 0, f"{path}:\n{result.stdout}"


@pytest.mark.parametrize(("cloud", "limit"), [("aws", 16384), ("azure", 65535), ("alicloud", 16384)])
def test_oversized_config_names_the_clouds_limit(cloud, limit):
    cfg = config(cloud, checkpoint_hook="/opt/ckpt.sh " + "x" * limit)
    with pytest.raises(BootstrapError, match=rf"over {cloud}'s {limit}-byte user data limit"):
        render_user_data(cfg)
    # The same hook, shortened to what the rest of the user data leaves, fits.
    room = limit - len(render_user_data(config(cloud, checkpoint_hook="/opt/ckpt.sh")).encode()) - 64
    assert render_user_data(config(cloud, checkpoint_hook="/opt/ckpt.sh " + "x" * room))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"expected": {}}, "expected: needs at least one instance type"),
        ({"checkpoint_grace_seconds": 0}, "checkpoint_grace_seconds: must be an integer >= 1"),
        ({"expected": {"p5.48xlarge": replace(H100, gpu_count=0)}}, r"expected\[p5.48xlarge\].gpu_count"),
        ({"expected": {"p5.48xlarge": replace(H100, fabric="nvlink")}}, r"expected\[p5.48xlarge\].fabric:"),
        (
            {"expected": {"p5.48xlarge": replace(H100, fabric_interfaces=0)}},
            "fabric_interfaces: 0 does not fit",
        ),
        ({"lifecycle": replace(LIFECYCLE, group_name="")}, "lifecycle.group_name"),
    ],
)
def test_bad_config_names_the_field(changes, message):
    with pytest.raises(BootstrapError, match=message):
        replace(config("aws"), **changes)


def test_lifecycle_outside_aws_is_refused():
    with pytest.raises(BootstrapError, match="lifecycle: only for cloud aws, not azure"):
        replace(config("azure"), lifecycle=LIFECYCLE)


def test_shared_mount_only_where_the_backend_builds_shared_storage():
    # The cloud's backend says what it builds (operations); the bootstrap asks it rather than keeping a list.
    from components.bootstrap.operations import SharedMount

    shared = SharedMount(dns_name="fs-1.fsx.us-east-1.amazonaws.com", mount_name="abcdef", mount="/data")
    with pytest.raises(BootstrapError, match="shared_mount: only for cloud aws, azure, not alicloud"):
        replace(config("alicloud"), shared_mount=shared)
    assert replace(config("azure"), shared_mount=shared).shared_mount == shared


# Scratch striping

