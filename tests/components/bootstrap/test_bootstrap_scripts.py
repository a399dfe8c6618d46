"""The node scripts (scratch, health, spot watcher) run against stub commands on a rendered node."""

from __future__ import annotations

import json

import pytest
from bootstrap_node import KERNEL_LINES, Node, config, node_files

from components.bootstrap import (
    render_user_data,
)
from components.bootstrap.operations import DCGM_UP_METRIC

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
    # The positive mark is what a cloud health probe reads (health-endpoint.py); a failed check drops it.
    assert (node.root / "run/gpufleet/healthy").exists()
    node.stub("gpufleet-nodecheck", "exit 1")
    assert node.run("gpufleet-health").returncode == 1
    assert not (node.root / "run/gpufleet/healthy").exists()


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


def test_azure_terminate_notice_of_a_regular_vm_runs_the_hook_and_acknowledges(tmp_path):
    node = Node(tmp_path, config("azure", checkpoint_hook=HOOK))
    events = {"Events": [{"EventId": "evt-5", "EventType": "Terminate", "Resources": ["vmss_3"]}]}
    node.curl({"compute/name": "vmss_3", "scheduledevents": json.dumps(events)})
    assert node.run("gpufleet-spot-watcher", "--once").returncode == 0
    calls = node.calls()
    ack = [c for c in calls if "-X POST" in c]
    assert len(ack) == 1 and "evt-5" in ack[0]
    assert calls.index("hook ran") < calls.index(ack[0])


def test_azure_event_for_another_vm_is_ignored(tmp_path):
    node = Node(tmp_path, config("azure", checkpoint_hook=HOOK))
    events = {"Events": [{"EventId": "evt-9", "EventType": "Preempt", "Resources": ["vmss_7"]}]}
    node.curl({"compute/name": "vmss_3", "scheduledevents": json.dumps(events)})
    assert node.run("gpufleet-spot-watcher", "--once").returncode == 0
    assert "hook ran" not in node.calls()


def test_alicloud_termination_time_runs_the_hook(tmp_path):
    node = Node(tmp_path, config("alicloud", checkpoint_hook=HOOK))
    node.curl({"api/token": "tok-1", "/instance/spot/termination-time": "2025-01-01T00:05:00Z"})
    assert node.run("gpufleet-spot-watcher", "--once").returncode == 0
    calls = node.calls()
    # Launch templates require metadata tokens: the read carries one (ECS user guide, view-instance-metadata).
    assert ("curl -sf -H X-aliyun-ecs-metadata-token: tok-1 "
            "http://100.100.100.200/latest/meta-data/instance/spot/termination-time") in calls
    assert calls.count("hook ran") == 1


def test_no_hook_configured_only_logs(tmp_path):
    node = Node(tmp_path, config("alicloud", checkpoint_hook=None))
    node.curl({"api/token": "tok-1", "/instance/spot/termination-time": "2025-01-01T00:05:00Z"})
    run = node.run("gpufleet-spot-watcher", "--once")
    assert run.returncode == 0
    assert "interruption notice; no checkpoint hook configured" in run.stderr


def test_watcher_polls_every_five_seconds_and_restarts():
    files = node_files(render_user_data(config("aws")))
    script = files["/usr/local/sbin/gpufleet-spot-watcher"]["content"]
    assert "INTERVAL=5\n" in script and 'sleep "$INTERVAL"' in script
    unit = files["/etc/systemd/system/gpufleet-spot-watcher.service"]["content"]
    assert "ExecStart=/usr/local/sbin/gpufleet-spot-watcher\n" in unit and "Restart=always\n" in unit


# DCGM error watch (gpufleet-gpu-health)

DMON = """#Entity   DBETO  UCRRW  RRF    NCRCT
ID
GPU 0     0      0      0      0
GPU 1     {dbe}      2      0      N/A
"""
XID_13_AND_109, XID_79 = KERNEL_LINES[:5], KERNEL_LINES[5:]


def health_node(tmp_path, lines: list[str], dbe: int, **changes: object) -> Node:
    from components.bootstrap.operations import GpuMetrics

    metrics = GpuMetrics("gpufleet", "gpufleet-train-dev-h100", "us-east-1")
    node = Node(tmp_path, config("aws", gpu_metrics=metrics, **changes))
    node.stub("dcgmi", f"cat <<'OUT'\n{DMON.format(dbe=dbe)}OUT")
    node.kernel_log(lines)
    node.curl({"api/token": "tok-1", "instance-id": "i-0abc"})
    return node


def published(node: Node) -> list[dict[str, float]]:
    puts = [c for c in node.calls() if c.startswith("aws cloudwatch put-metric-data")]
    return [{d["MetricName"]: d["Value"] for d in json.loads(put.split("--metric-data ", 1)[1])} for put in puts]


def test_gpu_health_publishes_dcgm_fields_per_node_group(tmp_path):
    node = health_node(tmp_path, XID_13_AND_109, dbe=0)
    assert node.run("gpufleet-gpu-health", "--once").returncode == 0
    (put,) = [c for c in node.calls() if c.startswith("aws cloudwatch put-metric-data")]
    assert "--region us-east-1 --namespace gpufleet" in put
    data = json.loads(put.split("--metric-data ", 1)[1])
    assert published(node) == [{"gpu_xid_errors": 4, "gpu_fatal_xid_errors": 0, "gpu_ecc_uncorrectable": 0,
                                "gpu_row_remap_failures": 0, "gpu_uncorrectable_remapped_rows": 2,
                                "gpu_nvlink_crc_errors": 0, "nodecheck_failed": 0, "dcgm_up": 1}]
    assert all(d["Dimensions"] == [{"Name": "NodeGroup", "Value": "gpufleet-train-dev-h100"}] for d in data)
    # XID 13 and 109 are application errors: the node stays.
    assert not [c for c in node.calls() if "set-instance-health" in c]


@pytest.mark.parametrize("dcgmi", ["echo 'Error: unable to establish a connection to the specified host' >&2; exit 255",
                                   "echo '#Entity   DBETO  UCRRW  RRF    NCRCT'"],
                         ids=["host-engine-down", "no-gpu-lines"])
def test_a_dcgm_that_does_not_answer_publishes_dcgm_down_and_none_of_its_fields(tmp_path, dcgmi: str):
    # Before: its fields were published as 0 (0 % utilisation scales the group in, zero errors hide a failing GPU).
    node = health_node(tmp_path, XID_79, dbe=0)
    node.stub("dcgmi", dcgmi)
    assert node.run("gpufleet-gpu-health", "--once").returncode == 0
    # The name the alarms read (components/clouds/*/alarms.py).
    assert published(node) == [{"gpu_xid_errors": 1, "gpu_fatal_xid_errors": 1, "nodecheck_failed": 0,
                                DCGM_UP_METRIC: 0}]
    # What was read still counts: the fatal XID in the kernel log takes the node out.
    assert [c for c in node.calls() if "set-instance-health" in c]


def test_gpu_health_counts_only_the_xids_new_since_the_last_round(tmp_path):
    # A count per interval, not the last XID: one harmless XID does not hold the alarm in ALARM for the node's life.
    node = health_node(tmp_path, XID_13_AND_109[:2], dbe=0)
    node.run("gpufleet-gpu-health", "--once")
    node.run("gpufleet-gpu-health", "--once")
    node.kernel_log(XID_13_AND_109[:2] + XID_13_AND_109[2:])
    node.run("gpufleet-gpu-health", "--once")
    assert [p["gpu_xid_errors"] for p in published(node)] == [1, 0, 3]


@pytest.mark.parametrize(("lines", "dbe"), [(XID_79, 0), ([], 1)])
def test_gpu_health_takes_a_broken_node_out_of_its_group_once(tmp_path, lines, dbe):
    node = health_node(tmp_path, lines, dbe=dbe)
    node.run("gpufleet-gpu-health", "--once")
    node.run("gpufleet-gpu-health", "--once")
    marked = [c for c in node.calls() if "set-instance-health" in c]
    assert marked == [
        "aws autoscaling set-instance-health --region us-east-1 --instance-id i-0abc --health-status Unhealthy "
        "--no-should-respect-grace-period"
    ]
    assert published(node)[0]["gpu_fatal_xid_errors"] == len(lines)


def test_gpu_health_on_a_fleet_group_publishes_but_marks_nothing(tmp_path):
    node = health_node(tmp_path, XID_79, dbe=0, lifecycle=None)
    node.run("gpufleet-gpu-health", "--once")
    assert [c for c in node.calls() if c.startswith("aws cloudwatch put-metric-data --region us-east-1")]
    assert not [c for c in node.calls() if "set-instance-health" in c]


def test_the_node_counts_the_fatal_xids_the_alarms_name() -> None:
    from components.bootstrap.cloud_init import node_script
    from components.bootstrap.operations import FATAL_XIDS

    (line,) = [line for line in node_script("gpu-health.sh").splitlines() if line.startswith("FATAL=")]
    assert tuple(int(code) for code in line.split("=", 1)[1].strip('"').split()) == FATAL_XIDS
