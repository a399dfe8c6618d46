"""Bootstrap user data: rendering, expect.json, and the node scripts run against stub commands."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from conftest import shellcheck

from components.bootstrap import (
    BootstrapConfig,
    BootstrapError,
    ExpectedType,
    LifecycleHooks,
    render_user_data,
    user_data_limit,
)

H100 = ExpectedType(gpu_model="H100", gpu_count=8, nvswitch=True, fabric="efa", fabric_interfaces=32)
H200 = ExpectedType(gpu_model="H200", gpu_count=8, nvswitch=True, fabric="efa", fabric_interfaces=32)
H200_EN = ExpectedType(gpu_model="H200", gpu_count=8, nvswitch=True, fabric="efa", fabric_interfaces=16)
A100 = ExpectedType(gpu_model="A100", gpu_count=8, nvswitch=True, fabric="efa", fabric_interfaces=4)
LIFECYCLE = LifecycleHooks(
    region="us-east-1",
    group_name="train-h100-asg",
    launch_hook="train-h100-launch",
    terminate_hook="train-h100-terminate",
)
STUBBED = (
    "lsblk",
    "nvme",
    "mdadm",
    "mkfs.xfs",
    "mount",
    "mountpoint",
    "blkid",
    "curl",
    "aws",
    "gpufleet-nodecheck",
)


def config(cloud: str = "aws", **changes: object) -> BootstrapConfig:
    """A p5 group with three fallback types, or a one-type group on Azure / Alibaba."""
    expected = {
        "aws": {"p5.48xlarge": H100, "p5e.48xlarge": H200, "p5en.48xlarge": H200_EN, "p4d.24xlarge": A100},
        "azure": {"Standard_ND96isr_H100_v5": replace(H100, fabric="infiniband", fabric_interfaces=8)},
        "alicloud": {"ecs.ebmgn8v.48xlarge": replace(H100, fabric="erdma", fabric_interfaces=2)},
    }[cloud]
    base = BootstrapConfig(
        cloud=cloud,
        cluster="train",
        node_group="h100",
        image_profile="cuda12.8-r570",
        driver="570.133.20",
        cuda="12.8",
        fabric_manager="570.133.20",
        expected=expected,
        scratch="raid0",
        scratch_mount="/scratch",
        checkpoint_hook="/opt/train/checkpoint.sh --reason 'spot'",
        checkpoint_grace_seconds=300,
        lifecycle=LIFECYCLE if cloud == "aws" else None,
    )
    return replace(base, **changes)


def node_files(user_data: str) -> dict[str, dict]:
    assert user_data.startswith("#cloud-config\n")
    document = yaml.safe_load(user_data)
    return {entry["path"]: entry for entry in document["write_files"]}


def install(user_data: str, root: Path) -> Path:
    """Write the rendered files under root, as cloud-init would under /."""
    for path, entry in node_files(user_data).items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(entry["content"])
        target.chmod(int(entry["permissions"], 8))
    return root


class Node:
    """A rendered node under tmp_path with stub commands that log their argv to one file."""

    def __init__(self, tmp_path: Path, cfg: BootstrapConfig) -> None:
        self.root = install(render_user_data(cfg), tmp_path / "node")
        self.fake = tmp_path / "fake"
        self.stubs = tmp_path / "stubs"
        self.log = tmp_path / "calls.log"
        (self.fake / "children").mkdir(parents=True)
        self.stubs.mkdir()
        self.log.touch()
        settings = self.root / "etc/gpufleet/bootstrap.env"
        settings.write_text(
            settings.read_text().replace(
                "GPUFLEET_SCRATCH_MOUNT=/scratch", f"GPUFLEET_SCRATCH_MOUNT={tmp_path}/scratch"
            )
        )
        self.scratch = tmp_path / "scratch"
        for name in STUBBED:
            self.stub(name, "exit 0")
        self.stub("mountpoint", "exit 1")
        self.stub("blkid", "exit 2")
        self.stub("mdadm", "[[ $1 == --assemble ]] && exit 1; exit 0")
        self.stub("lsblk", '[[ $1 == -d ]] && exec cat "$FAKE/disks"; cat "$FAKE/children/${!###*/}"')
        self.stub(
            "curl",
            "url=${!#}\nwhile IFS=$'\\t' read -r key body; do\n"
            '  [[ $url == *"$key"* ]] && { printf "%s" "$body"; exit 0; }\n'
            'done < "$FAKE/curl.tsv"\nexit 22',
        )
        (self.fake / "curl.tsv").write_text("")

    def stub(self, name: str, body: str) -> None:
        path = self.stubs / name
        path.write_text(f'#!/bin/bash\necho "{name} $*" >> "$STUB_LOG"\n{body}\n')
        path.chmod(0o755)

    def disks(
        self, *rows: tuple[str, str, str], children: dict[str, list[tuple[str, str, str]]] | None = None
    ):
        """rows: (name, type, model); children: name -> (name, type, mountpoint) below the disk."""
        self.fake.joinpath("disks").write_text(
            "".join(f'NAME="{n}" TYPE="{t}" MODEL="{m}"\n' for n, t, m in rows)
        )
        for name, kind, _ in rows:
            below = [(name, kind, "")] + (children or {}).get(name, [])
            self.fake.joinpath("children", name).write_text(
                "".join(f'NAME="{n}" TYPE="{t}" MOUNTPOINT="{p}"\n' for n, t, p in below)
            )

    def curl(self, responses: dict[str, str]) -> None:
        self.fake.joinpath("curl.tsv").write_text("".join(f"{k}\t{v}\n" for k, v in responses.items()))

    def run(self, program: str, *args: str) -> subprocess.CompletedProcess[str]:
        env = {
            "PATH": f"{self.stubs}:/usr/bin:/bin",
            "STUB_LOG": str(self.log),
            "FAKE": str(self.fake),
            "GPUFLEET_ETC": str(self.root / "etc/gpufleet"),
            "GPUFLEET_RUN": str(self.root / "run/gpufleet"),
            "GPUFLEET_LIB": str(self.root / "usr/local/lib/gpufleet"),
        }
        return subprocess.run(
            ["bash", str(self.root / "usr/local/sbin" / program), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines()


# Rendering


@pytest.mark.parametrize("cloud", ["aws", "azure", "alicloud"])
def test_render_is_deterministic(cloud):
    assert render_user_data(config(cloud)) == render_user_data(config(cloud))


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
    for word in ("complete-lifecycle-action", "CONTINUE", "ABANDON", "X-aws-ec2-metadata-token"):
        assert word in user_data


def test_runcmd_enables_and_starts_every_unit():
    document = yaml.safe_load(render_user_data(config("aws")))
    units = ["gpufleet-scratch.service", "gpufleet-health.service", "gpufleet-spot-watcher.service"]
    assert document["runcmd"] == [
        ["systemctl", "daemon-reload"],
        ["systemctl", "enable", *units],
        ["systemctl", "start", "--no-block", *units],
    ]


def test_settings_quote_hostile_values_for_the_shell(tmp_path):
    hook = "echo $HOME; touch /tmp/pwned `id` 'q' \"d\""
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
        ({"cloud": "gcp"}, "cloud: must be one of aws, azure, alicloud"),
        ({"expected": {}}, "expected: needs at least one instance type"),
        ({"scratch_mount": "scratch"}, "scratch_mount: must be an absolute path"),
        ({"scratch_mount": "/scratch/../etc"}, "scratch_mount: must be a normalised path"),
        ({"scratch": "raid5"}, "scratch: must be raid0 or none"),
        ({"driver": ""}, "driver: must be a non-empty string"),
        ({"checkpoint_hook": "  "}, "checkpoint_hook: must be a non-empty string"),
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


# Scratch striping

EBS = "Amazon Elastic Block Store              "
INSTANCE_STORE = "Amazon EC2 NVMe Instance Storage        "


def test_aws_stripes_only_instance_store(tmp_path):
    node = Node(tmp_path, config("aws"))
    node.disks(
        ("nvme0n1", "disk", EBS),
        ("nvme1n1", "disk", EBS),
        *[(f"nvme{i}n1", "disk", INSTANCE_STORE) for i in range(2, 6)],
        children={"nvme0n1": [("nvme0n1p1", "part", "/")]},
    )
    result = node.run("gpufleet-scratch")
    assert result.returncode == 0, result.stderr
    devices = " ".join(f"/dev/nvme{i}n1" for i in range(2, 6))
    calls = node.calls()
    assert f"mdadm --assemble /dev/md/gpufleet-scratch {devices}" in calls
    assert (
        f"mdadm --create /dev/md/gpufleet-scratch --run --level=0 --raid-devices=4 "
        f"--name=gpufleet-scratch {devices}"
    ) in calls
    assert "mkfs.xfs -L gpufleet /dev/md/gpufleet-scratch" in calls
    assert f"mount -o noatime /dev/md/gpufleet-scratch {node.scratch}" in calls
    assert node.scratch.is_dir()
    touched = [c for c in calls if c != "lsblk -d -n -P -o NAME,TYPE,MODEL"]
    assert not [c for c in touched if "nvme0n1" in c or "nvme1n1" in c]


def test_aws_skips_a_mounted_instance_store_disk_and_uses_a_single_one_directly(tmp_path):
    node = Node(tmp_path, config("aws"))
    node.disks(
        ("nvme0n1", "disk", EBS),
        ("nvme1n1", "disk", INSTANCE_STORE),
        ("nvme2n1", "disk", INSTANCE_STORE),
        children={"nvme1n1": [("nvme1n1p1", "part", "/data")]},
    )
    result = node.run("gpufleet-scratch")
    assert result.returncode == 0, result.stderr
    calls = node.calls()
    assert not [c for c in calls if c.startswith("mdadm")]
    assert "mkfs.xfs -L gpufleet /dev/nvme2n1" in calls
    assert f"mount -o noatime /dev/nvme2n1 {node.scratch}" in calls
    assert not [c for c in calls if c.startswith(("mkfs", "mount ")) and "nvme1n1" in c]


def test_azure_stripes_nvme_direct_disks_never_the_os_disk(tmp_path):
    node = Node(tmp_path, config("azure"))
    node.disks(
        ("sda", "disk", "Virtual Disk    "),
        ("sdb", "disk", "Virtual Disk    "),
        *[(f"nvme{i}n1", "disk", "Microsoft NVMe Direct Disk              ") for i in range(8)],
        children={"sda": [("sda1", "part", "/")]},
    )
    result = node.run("gpufleet-scratch")
    assert result.returncode == 0, result.stderr
    calls = node.calls()
    create = [c for c in calls if c.startswith("mdadm --create")]
    assert create == [
        (
            "mdadm --create /dev/md/gpufleet-scratch --run --level=0 --raid-devices=8 "
            "--name=gpufleet-scratch " + " ".join(f"/dev/nvme{i}n1" for i in range(8))
        )
    ]
    assert not [c for c in calls if "sda" in c or "sdb" in c]


def test_alicloud_uses_local_nvme_never_cloud_disks(tmp_path):
    node = Node(tmp_path, config("alicloud"))
    node.disks(
        ("nvme0n1", "disk", "Alibaba Cloud Elastic Block Storage     "),
        ("nvme1n1", "disk", "Alibaba Cloud Elastic Block Storage     "),
        ("vdb", "disk", ""),
        ("nvme2n1", "disk", "Local NVMe SSD"),
        ("nvme3n1", "disk", "Local NVMe SSD"),
        children={"nvme0n1": [("nvme0n1p1", "part", "/")]},
    )
    result = node.run("gpufleet-scratch")
    assert result.returncode == 0, result.stderr
    calls = node.calls()
    assert [c for c in calls if c.startswith("mdadm --create")][0].endswith("/dev/nvme2n1 /dev/nvme3n1")
    touched = [c for c in calls if c != "lsblk -d -n -P -o NAME,TYPE,MODEL"]
    assert not [c for c in touched if "nvme0n1" in c or "nvme1n1" in c or "vdb" in c]


def test_reboot_reuses_the_assembled_array_and_its_filesystem(tmp_path):
    node = Node(tmp_path, config("aws"))
    node.disks(
        ("nvme1n1", "disk", INSTANCE_STORE),
        ("nvme2n1", "disk", INSTANCE_STORE),
        children={"nvme1n1": [("md127", "raid0", "")], "nvme2n1": [("md127", "raid0", "")]},
    )
    node.stub("blkid", "echo xfs")
    result = node.run("gpufleet-scratch")
    assert result.returncode == 0, result.stderr
    calls = node.calls()
    assert not [c for c in calls if c.startswith(("mdadm", "mkfs.xfs"))]
    assert f"mount -o noatime /dev/md127 {node.scratch}" in calls


def test_already_mounted_scratch_is_left_alone(tmp_path):
    node = Node(tmp_path, config("aws"))
    node.disks(("nvme1n1", "disk", INSTANCE_STORE))
    node.stub("mountpoint", "exit 0")
    result = node.run("gpufleet-scratch")
    assert result.returncode == 0
    assert node.calls() == [f"mountpoint -q {node.scratch}"]


# Node check and health report

AWS_IMDS = {"/latest/api/token": "tok-1", "/meta-data/instance-id": "i-0abc"}


@pytest.mark.parametrize(("check_exit", "result", "status"), [(0, "CONTINUE", 0), (3, "ABANDON", 1)])
def test_aws_health_completes_the_launch_hook(tmp_path, check_exit, result, status):
    node = Node(tmp_path, config("aws"))
    node.curl(AWS_IMDS)
    node.stub("gpufleet-nodecheck", f'echo "{{}}"; exit {check_exit}')
    run = node.run("gpufleet-health")
    assert run.returncode == status
    calls = node.calls()
    assert (f"gpufleet-nodecheck --expect {node.root}/etc/gpufleet/expect.json --format json") in calls
    assert (
        "aws autoscaling complete-lifecycle-action --region us-east-1 --auto-scaling-group-name "
        f"train-h100-asg --lifecycle-hook-name train-h100-launch --instance-id i-0abc "
        f"--lifecycle-action-result {result}"
    ) in calls
    assert (
        "curl -sf -H X-aws-ec2-metadata-token: tok-1 http://169.254.169.254/latest/meta-data/instance-id"
        in calls
    )
    assert (node.root / "run/gpufleet/unhealthy").exists() == (status == 1)


@pytest.mark.parametrize("cloud", ["azure", "alicloud"])
def test_failed_check_marks_the_node_unhealthy(tmp_path, cloud):
    node = Node(tmp_path, config(cloud))
    node.stub("gpufleet-nodecheck", "exit 1")
    run = node.run("gpufleet-health")
    assert run.returncode == 1
    assert "node check failed" in run.stderr
    assert (node.root / "run/gpufleet/unhealthy").exists()
    assert not [c for c in node.calls() if c.startswith("aws ")]


def test_passed_check_clears_a_stale_unhealthy_mark(tmp_path):
    node = Node(tmp_path, config("azure"))
    (node.root / "run/gpufleet").mkdir(parents=True)
    (node.root / "run/gpufleet/unhealthy").touch()
    assert node.run("gpufleet-health").returncode == 0
    assert not (node.root / "run/gpufleet/unhealthy").exists()


# Spot interruption watcher

HOOK = 'echo "hook ran" >> "$STUB_LOG"'


def test_aws_interruption_runs_the_hook_once(tmp_path):
    node = Node(tmp_path, config("aws", checkpoint_hook=HOOK))
    node.curl(
        {**AWS_IMDS, "/spot/instance-action": '{"action": "terminate", "time": "2025-01-01T00:02:00Z"}'}
    )
    for _ in range(2):
        assert node.run("gpufleet-spot-watcher", "--once").returncode == 0
    calls = node.calls()
    assert calls.count("hook ran") == 1
    assert (
        "curl -sf -H X-aws-ec2-metadata-token: tok-1 http://169.254.169.254/latest/meta-data/spot/instance-action"
        in calls
    )
    assert not [c for c in calls if c.startswith("aws ")]


def test_checkpoint_hook_runs_for_the_stacks_grace_not_a_fixed_time(tmp_path):
    """Every cloud's notice goes through the same checkpoint step; AWS stands for them."""
    notice = {**AWS_IMDS, "/spot/instance-action": '{"action": "terminate"}'}
    hook = 'sleep 2; echo "hook finished" >> "$STUB_LOG"'
    short = Node(tmp_path / "short", config("aws", checkpoint_hook=hook, checkpoint_grace_seconds=1))
    short.curl(notice)
    run = short.run("gpufleet-spot-watcher", "--once")
    assert "hook finished" not in short.calls()
    assert "checkpoint hook exited 124" in run.stderr  # timeout(1) ended it at the grace
    enough = Node(tmp_path / "enough", config("aws", checkpoint_hook=hook, checkpoint_grace_seconds=10))
    enough.curl(notice)
    enough.run("gpufleet-spot-watcher", "--once")
    assert "hook finished" in enough.calls()


def test_aws_no_notice_runs_nothing(tmp_path):
    node = Node(tmp_path, config("aws", checkpoint_hook=HOOK))
    node.curl(AWS_IMDS)
    assert node.run("gpufleet-spot-watcher", "--once").returncode == 0
    calls = node.calls()
    assert "hook ran" not in calls
    assert any(c.endswith("/latest/meta-data/events/recommendations/rebalance") for c in calls)


def test_aws_terminating_instance_checkpoints_then_continues_the_terminate_hook(tmp_path):
    node = Node(tmp_path, config("aws", checkpoint_hook=HOOK))
    node.curl({**AWS_IMDS, "/autoscaling/target-lifecycle-state": "Terminated"})
    for _ in range(2):
        assert node.run("gpufleet-spot-watcher", "--once").returncode == 0
    calls = node.calls()
    complete = (
        "aws autoscaling complete-lifecycle-action --region us-east-1 --auto-scaling-group-name "
        "train-h100-asg --lifecycle-hook-name train-h100-terminate --instance-id i-0abc "
        "--lifecycle-action-result CONTINUE"
    )
    assert calls.count(complete) == 1 and calls.count("hook ran") == 1
    assert calls.index("hook ran") < calls.index(complete)


def test_azure_preempt_runs_the_hook_and_acknowledges(tmp_path):
    node = Node(tmp_path, config("azure", checkpoint_hook=HOOK))
    events = {
        "DocumentIncarnation": 2,
        "Events": [
            {"EventId": "evt-other", "EventType": "Preempt", "Resources": ["vmss_7"]},
            {"EventId": "evt-1", "EventType": "Preempt", "Resources": ["vmss_3"]},
            {"EventId": "evt-2", "EventType": "Reboot", "Resources": ["vmss_3"]},
        ],
    }
    node.curl({"compute/name": "vmss_3", "scheduledevents": json.dumps(events)})
    assert node.run("gpufleet-spot-watcher", "--once").returncode == 0
    calls = node.calls()
    url = "http://169.254.169.254/metadata/scheduledevents?api-version=2020-07-01"
    assert f"curl -sf -H Metadata:true {url}" in calls
    ack = f'curl -sf -H Metadata:true -X POST -d {{"StartRequests":[{{"EventId":"evt-1"}}]}} {url}'
    assert [c for c in calls if "-X POST" in c] == [ack]
    assert calls.index("hook ran") < calls.index(ack)


def test_azure_event_for_another_vm_is_ignored(tmp_path):
    node = Node(tmp_path, config("azure", checkpoint_hook=HOOK))
    events = {"Events": [{"EventId": "evt-9", "EventType": "Preempt", "Resources": ["vmss_7"]}]}
    node.curl({"compute/name": "vmss_3", "scheduledevents": json.dumps(events)})
    assert node.run("gpufleet-spot-watcher", "--once").returncode == 0
    assert "hook ran" not in node.calls()


def test_alicloud_termination_time_runs_the_hook(tmp_path):
    node = Node(tmp_path, config("alicloud", checkpoint_hook=HOOK))
    node.curl({"/instance/spot/termination-time": "2025-01-01T00:05:00Z"})
    assert node.run("gpufleet-spot-watcher", "--once").returncode == 0
    calls = node.calls()
    assert "curl -sf http://100.100.100.200/latest/meta-data/instance/spot/termination-time" in calls
    assert calls.count("hook ran") == 1


def test_no_hook_configured_only_logs(tmp_path):
    node = Node(tmp_path, config("alicloud", checkpoint_hook=None))
    node.curl({"/instance/spot/termination-time": "2025-01-01T00:05:00Z"})
    run = node.run("gpufleet-spot-watcher", "--once")
    assert run.returncode == 0
    assert "interruption notice; no checkpoint hook configured" in run.stderr


def test_watcher_polls_every_five_seconds_and_restarts():
    files = node_files(render_user_data(config("aws")))
    script = files["/usr/local/sbin/gpufleet-spot-watcher"]["content"]
    assert "INTERVAL=5\n" in script and 'sleep "$INTERVAL"' in script
    unit = files["/etc/systemd/system/gpufleet-spot-watcher.service"]["content"]
    assert "ExecStart=/usr/local/sbin/gpufleet-spot-watcher\n" in unit and "Restart=always\n" in unit
