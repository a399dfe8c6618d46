"""EKS node groups as the engine records them: the join rendered after the node check in the (gzipped) user data,
the kubelet's labels and taints, the owner tag on instances, and the Auto Scaling group's Cluster Autoscaler tags.
Built from NodeGroupArgs with an EksJoin made of outputs, under the project's mock engine."""

from __future__ import annotations

import base64
import copy
import gzip
from functools import cache
from typing import Any

import libyaml_files
import pulumi
import pytest
from bootstrap_node import node_files, sent_user_data
from conftest import read_cluster

from components.bootstrap import BootstrapError, render_user_data
from components.bootstrap.eks_join import KUBELET_UNITS
from components.clouds.aws.eks_join import EksJoin
from components.clouds.aws.lifecycle import group_hooks
from components.clouds.aws.nodegroup import AwsNodeGroup
from components.clouds.aws.nodegroup_args import NodeGroupArgs
from gpufleet.clouds.backend import ResolvedCluster
from gpufleet.plan.engine import run_program
from gpufleet.plan.record import RecordedResource
from gpufleet.resolve import resolve_cluster

LT = "aws:ec2/launchTemplate:LaunchTemplate"
ASG = "aws:autoscaling/group:Group"
PG = "aws:ec2/placementGroup:PlacementGroup"
CLUSTER = "train-eks"
ENDPOINT = "https://0123456789ABCDEF0123456789ABCDEF.gr7.us-east-1.eks.amazonaws.com"
CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\n" + b"M" * 1000 + b"\n-----END CERTIFICATE-----\n").decode()
TEMPLATE = "k8s.io/cluster-autoscaler/node-template"


@cache
def resolved(stack: str, sharing: str | None = None) -> ResolvedCluster:
    cluster = copy.deepcopy(read_cluster(stack))
    group = cluster["node_groups"][0]
    group["labels"] = {"team.example.com/queue": "research"}
    group["taints"] = [{"key": "team.example.com/dedicated", "value": "train", "effect": "NoSchedule"}]
    if sharing == "time-slicing":
        group.update(gpu_sharing={"mode": "time-slicing", "replicas": 4}, rdma="off")
    return resolve_cluster(cluster)


def eks_join() -> EksJoin:
    out = pulumi.Output.from_input
    return EksJoin(out(CLUSTER), out(ENDPOINT), out(CA), out("172.20.0.0/16"))


def record(stack: str, eks: bool = True, sharing: str | None = None, name: str = CLUSTER,
           **changes: Any) -> list[RecordedResource]:
    """The group's resources; `changes` replace fields of its settings after the stack checks (what a later check
    would refuse reaches the component as it is)."""
    cluster = resolved(stack, sharing)
    group = cluster.groups[0]
    settings = group.spec.model_copy(update=changes)
    hooks = group_hooks(cluster.spec.bootstrap.checkpoint_grace_seconds)
    from components.bootstrap.for_group import group_bootstrap

    bootstrap = group_bootstrap(cluster, group, checkpoint_grace_seconds=hooks.terminate.heartbeat_timeout,
                                lifecycle=hooks.for_node("us-east-1", group.names["scaling_group"]))

    def program() -> None:
        AwsNodeGroup(f"{name}-{group.name}", NodeGroupArgs(
            group=settings, types=group.known_types, rdma=group.rdma, asg_name=group.names["scaling_group"],
            image_id=None, image_tags={}, subnet_ids=["subnet-0a"], security_group_id="sg-0nodes",
            instance_profile_arn="arn:aws:iam::123456789012:instance-profile/n", key_arn="arn:aws:kms:k",
            root_volume_gb=200, user_data=render_user_data(bootstrap), hooks=hooks, tags={"gpufleet:cluster": "x"},
            eks=eks_join() if eks else None,
        ))

    return run_program(program, {}, project="gpufleet", stack="test", region="us-east-1", zones=["us-east-1a"])


def one(resources: list[RecordedResource], typ: str) -> RecordedResource:
    (found,) = [r for r in resources if r.type == typ]
    return found


def cloud_config(template: RecordedResource) -> tuple[bytes, str]:
    raw = base64.b64decode(template.inputs["userData"])
    return raw, gzip.decompress(raw).decode()


def asg_tags(resources: list[RecordedResource]) -> dict[str, str]:
    return {t["key"]: t["value"] for t in one(resources, ASG).inputs["tags"]}


@pytest.fixture(scope="module")
def p5() -> list[RecordedResource]:
    return record("aws-train-eks")


def test_the_join_runs_after_the_node_check_and_requires_it(p5: list[RecordedResource]) -> None:
    raw, text = cloud_config(one(p5, LT))
    assert raw[:2] == b"\x1f\x8b" and len(raw) <= 16384  # gzip, within EC2's cap
    document = libyaml_files.load(text)
    enable, start = document["runcmd"][1], document["runcmd"][2]
    for line in (enable, start):
        assert line.index("gpufleet-health.service") < line.index("gpufleet-eks-join.service")
    files = node_files(text)
    unit = files["/etc/systemd/system/gpufleet-eks-join.service"]["content"]
    assert "Requires=gpufleet-health.service" in unit and "After=gpufleet-health.service" in unit
    for kubelet in KUBELET_UNITS:
        drop_in = files[f"/etc/systemd/system/{kubelet}.d/gpufleet-node-check.conf"]["content"]
        assert drop_in == "[Unit]\nRequires=gpufleet-health.service\nAfter=gpufleet-health.service\n"
    script = files["/usr/local/sbin/gpufleet-eks-join"]["content"]
    assert '"$BOOTSTRAP" "$GPUFLEET_EKS_CLUSTER"' in script and "--dns-cluster-ip" in script


def test_the_settings_carry_the_cluster_dns_labels_and_taints(p5: list[RecordedResource]) -> None:
    _, text = cloud_config(one(p5, LT))
    env = node_files(text)["/etc/gpufleet/eks.env"]["content"]
    settings = dict(line.split("=", 1) for line in env.splitlines() if not line.startswith("#"))
    assert settings["GPUFLEET_EKS_CLUSTER"] == CLUSTER and settings["GPUFLEET_EKS_ENDPOINT"] == ENDPOINT
    assert settings["GPUFLEET_EKS_CA"] == CA and settings["GPUFLEET_EKS_DNS_IP"] == "172.20.0.10"
    labels = dict(pair.split("=") for pair in settings["GPUFLEET_EKS_LABELS"].split(","))
    placement = one(p5, PG)
    assert labels == {
        "team.example.com/queue": "research", "gpufleet.io/group": "h100", "gpufleet.io/fabric": "efa",
        "gpufleet.io/placement-group": labels["gpufleet.io/placement-group"], "k8s.amazonaws.com/accelerator":
        "nvidia-h100",
    }
    assert labels["gpufleet.io/placement-group"].startswith(placement.name)
    assert "topology.kubernetes.io/zone" not in labels
    assert settings["GPUFLEET_EKS_TAINTS"] == (
        "team.example.com/dedicated=train:NoSchedule,nvidia.com/gpu=present:NoSchedule")


def test_an_efa_group_lifts_containerds_locked_memory_limit_and_a_plain_group_does_not(
        p5: list[RecordedResource]) -> None:
    drop_in = "/etc/systemd/system/containerd.service.d/gpufleet-memlock.conf"
    files = node_files(cloud_config(one(p5, LT))[1])
    assert files[drop_in]["content"] == "[Service]\nLimitMEMLOCK=infinity\n"
    assert "GPUFLEET_EKS_RESTART_CONTAINERD=true" in files["/etc/gpufleet/eks.env"]["content"]
    plain = node_files(cloud_config(one(record("aws-infer-eks", sharing="time-slicing"), LT))[1])
    assert drop_in not in plain and "GPUFLEET_EKS_RESTART_CONTAINERD=false" in plain["/etc/gpufleet/eks.env"]["content"]


def test_the_vm_part_of_the_user_data_is_unchanged(p5: list[RecordedResource]) -> None:
    vm = libyaml_files.load(sent_user_data(one(record("aws-train-eks", eks=False), LT).inputs["userData"]))
    eks = libyaml_files.load(cloud_config(one(p5, LT))[1])
    assert eks["write_files"][: len(vm["write_files"])] == vm["write_files"]
    assert [line for line in eks["runcmd"][1] if line != "gpufleet-eks-join.service"] == vm["runcmd"][1]


def test_instances_carry_the_owner_tag_and_a_vm_group_none(p5: list[RecordedResource]) -> None:
    specs = {s["resourceType"]: s["tags"] for s in one(p5, LT).inputs["tagSpecifications"]}
    assert specs["instance"][f"kubernetes.io/cluster/{CLUSTER}"] == "owned"
    assert not any(k.startswith("kubernetes.io/cluster/") for k in specs["volume"])
    vm = one(record("aws-train-eks", eks=False), LT).inputs["tagSpecifications"]
    assert not any(k.startswith("kubernetes.io/") for s in vm for k in s["tags"])


def test_the_group_tells_the_autoscaler_its_labels_taints_and_resources(p5: list[RecordedResource]) -> None:
    tags = asg_tags(p5)
    assert tags["k8s.io/cluster-autoscaler/enabled"] == "true"
    assert tags[f"k8s.io/cluster-autoscaler/{CLUSTER}"] == "owned"
    assert tags[f"{TEMPLATE}/label/gpufleet.io/fabric"] == "efa"
    assert tags[f"{TEMPLATE}/label/gpufleet.io/group"] == "h100"
    assert tags[f"{TEMPLATE}/label/gpufleet.io/placement-group"].startswith(one(p5, PG).name)
    assert tags[f"{TEMPLATE}/taint/nvidia.com/gpu"] == "present:NoSchedule"
    assert tags[f"{TEMPLATE}/taint/team.example.com/dedicated"] == "train:NoSchedule"
    assert tags[f"{TEMPLATE}/resources/nvidia.com/gpu"] == "8"
    assert tags[f"{TEMPLATE}/resources/vpc.amazonaws.com/efa"] == "32"
    assert tags[f"{TEMPLATE}/resources/hugepages-2Mi"] == "10256Mi"  # 5128 pages of 2 MiB, from the EFA driver
    assert all(not t["propagateAtLaunch"] for t in one(p5, ASG).inputs["tags"])


def test_a_spot_groups_template_carries_the_lifecycle_label_its_nodes_join_with(p5: list[RecordedResource]) -> None:
    # aws-train-eks is capacity spot: every node joins with node.kubernetes.io/lifecycle=spot (IMDS), which the
    # termination handler selects on; a mixed group's next node may be either, so its template says neither.
    assert asg_tags(p5)[f"{TEMPLATE}/label/node.kubernetes.io/lifecycle"] == "spot"
    assert f"{TEMPLATE}/label/node.kubernetes.io/lifecycle" not in asg_tags(record("aws-infer-eks"))


def test_time_sliced_gpus_scale_from_zero_as_replicas() -> None:
    resources = record("aws-infer-eks", sharing="time-slicing")
    tags = asg_tags(resources)
    gpus = resolved("aws-infer-eks", "time-slicing").groups[0].known_types[0].gpu.count
    assert tags[f"{TEMPLATE}/resources/nvidia.com/gpu"] == str(gpus * 4)
    assert tags[f"{TEMPLATE}/label/nvidia.com/device-plugin.config"] == "group-" + resolved(
        "aws-infer-eks", "time-slicing").groups[0].name
    assert f"{TEMPLATE}/resources/vpc.amazonaws.com/efa" not in tags
    assert f"{TEMPLATE}/resources/hugepages-2Mi" not in tags
    assert f"{TEMPLATE}/label/gpufleet.io/placement-group" not in tags


def test_pods_cannot_reach_the_node_role_through_imds_and_vm_containers_still_can(p5: list[RecordedResource]) -> None:
    # Hop limit 1: a pod outside the host network namespace is one hop too far for an IMDSv2 token.
    assert one(p5, LT).inputs["metadataOptions"] == {"httpEndpoint": "enabled", "httpTokens": "required",
                                                     "httpPutResponseHopLimit": 1}
    vm = one(record("aws-train-eks", eks=False), LT).inputs["metadataOptions"]
    assert vm["httpPutResponseHopLimit"] == 2 and vm["httpTokens"] == "required"


def test_a_vm_group_has_no_autoscaler_tags() -> None:
    tags = asg_tags(record("aws-train-eks", eks=False))
    assert not any(k.startswith("k8s.io/") for k in tags)


def test_a_label_the_kubelet_may_not_set_is_refused_before_any_resource() -> None:
    labels = {"node-role.kubernetes.io/worker": "true"}
    with pytest.raises(BootstrapError, match=r"^node_groups\[h100\]\.labels: node-role\.kubernetes\.io/worker cannot "
                                             r"be set by a node's kubelet"):
        record("aws-train-eks", labels=labels)


def test_a_placement_group_name_too_long_for_a_label_is_refused() -> None:
    with pytest.raises(BootstrapError, match=r"^node_groups\[h100\]\.labels\[gpufleet\.io/placement-group\]: "):
        record("aws-train-eks", name="a-cluster-name-long-enough-to-push-the-placement-group-past")


def test_a_label_gpufleet_sets_cannot_come_from_the_stack() -> None:
    with pytest.raises(BootstrapError, match=r"^node_groups\[h100\]\.labels: gpufleet\.io/group are set by gpufleet"):
        record("aws-train-eks", labels={"gpufleet.io/group": "other"})


def test_a_fleet_cannot_join() -> None:
    with pytest.raises(pulumi.RunError, match=r"node_groups\[h100\]\.provisioner: fleet cannot join an EKS cluster"):
        record("aws-train-eks", provisioner="fleet")


def test_labels_past_the_groups_tag_limit_are_refused() -> None:
    labels = {f"team.example.com/l{i}": "x" for i in range(50)}
    with pytest.raises(BootstrapError, match=r"^node_groups\[h100\]\.labels: the Auto Scaling group would carry \d+ "
                                             r"tags .* over the 50 a group holds"):
        record("aws-train-eks", labels=labels)
