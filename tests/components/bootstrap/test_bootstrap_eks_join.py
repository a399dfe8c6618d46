"""The EKS join in a node's user data: the cluster DNS address, the labels a kubelet may set on itself, the join
script run on a node (image bootstrap.sh stubbed), the gzipped size against EC2's cap, and shellcheck."""

from __future__ import annotations

import gzip
import subprocess
from pathlib import Path
from typing import Any

import libyaml_files
import pytest
from bootstrap_node import Node, config, install, node_files
from conftest import shellcheck

from components.bootstrap import BootstrapError, render_user_data, user_data_limit
from components.bootstrap.eks_join import (
    EksNode,
    dns_cluster_ip,
    eks_cloud_config,
    eks_user_data,
    kubelet_may_set,
)
from components.bootstrap.operations import GpuMetrics

ENDPOINT = "https://0123456789ABCDEF0123456789ABCDEF.gr7.us-east-1.eks.amazonaws.com"
# A real EKS cluster CA is a ~1.1 KB PEM, ~1.5 KB in base64.
CA = "LS0tLS1CRUdJTi" + "Q" * 1480 + "=="
LABELS = {"gpufleet.io/group": "h100", "gpufleet.io/fabric": "efa", "nvidia.com/device-plugin.config": "group-h100"}
TAINTS = (("nvidia.com/gpu", "present", "NoSchedule"), ("example.com/only", "", "NoExecute"))


def eks_node(**changes: Any) -> EksNode:
    values: dict[str, Any] = {"cluster_name": "train-eks", "endpoint": ENDPOINT, "certificate_authority": CA,
                              "service_cidr": "10.100.0.0/16", "labels": LABELS, "taints": TAINTS}
    return EksNode(**{**values, **changes})


@pytest.mark.parametrize(("cidr", "address"), [("10.100.0.0/16", "10.100.0.10"), ("172.20.0.0/16", "172.20.0.10"),
                                               ("192.168.128.0/20", "192.168.128.10")])
def test_cluster_dns_is_the_tenth_address_of_the_service_range(cidr: str, address: str) -> None:
    assert dns_cluster_ip(cidr) == address


@pytest.mark.parametrize("cidr", ["fd00::/108", "10.100.0.0/29", "not-a-range"])
def test_a_service_range_without_a_dns_address_names_the_field(cidr: str) -> None:
    with pytest.raises(BootstrapError, match=r"^eks\.service_cidr: "):
        dns_cluster_ip(cidr)


@pytest.mark.parametrize("key", ["gpufleet.io/group", "nvidia.com/mig.config", "k8s.amazonaws.com/accelerator",
                                 "node.kubernetes.io/lifecycle", "kubelet.kubernetes.io/x",
                                 "topology.kubernetes.io/zone", "plain"])
def test_labels_node_restriction_lets_a_kubelet_set(key: str) -> None:
    assert kubelet_may_set(key)


@pytest.mark.parametrize("key", ["node-role.kubernetes.io/worker", "kubernetes.io/role", "example.k8s.io/x",
                                 "node-restriction.kubernetes.io/pool", "a.node-restriction.kubernetes.io/pool",
                                 "k8s.io/x"])
def test_labels_node_restriction_refuses_a_kubelet(key: str) -> None:
    assert not kubelet_may_set(key)
    with pytest.raises(BootstrapError, match=rf"^labels: {key} cannot be set by a node's kubelet"):
        eks_node(labels={**LABELS, key: "x"})


def test_the_kubelet_flags_list_labels_and_taints_as_it_parses_them() -> None:
    node = eks_node()
    assert node.label_arg() == (
        "gpufleet.io/fabric=efa,gpufleet.io/group=h100,nvidia.com/device-plugin.config=group-h100")
    assert node.taint_arg() == "nvidia.com/gpu=present:NoSchedule,example.com/only:NoExecute"


@pytest.mark.parametrize(("field", "value"), [("endpoint", "http://plain"), ("cluster_name", ""),
                                              ("certificate_authority", "two words")])
def test_bad_cluster_values_name_the_field(field: str, value: str) -> None:
    with pytest.raises(BootstrapError, match=rf"^eks\.{field}: "):
        eks_node(**{field: value})


def test_the_p5_group_with_three_fallbacks_fits_ec2s_cap_gzipped() -> None:
    # GPU metrics too: the largest AWS bootstrap, over the cap once the join is added, within it gzipped.
    plain = render_user_data(config("aws", gpu_metrics=GpuMetrics("gpufleet", "train-h100-asg", "us-east-1")))
    packed = eks_user_data(plain, eks_node(), "h100")
    assert len(packed) <= user_data_limit("aws") < len(eks_cloud_config(plain, eks_node()).encode())
    assert gzip.decompress(packed).decode() == eks_cloud_config(plain, eks_node())
    assert packed == eks_user_data(plain, eks_node(), "h100")  # the same bytes every render


def test_a_join_over_the_cap_even_gzipped_names_the_group() -> None:
    import random

    rng = random.Random(0)
    noise = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(20000))
    with pytest.raises(BootstrapError, match=r"gzipped is over aws's 16384-byte user data limit \(node group h100\)"):
        eks_user_data(render_user_data(config("aws")), eks_node(certificate_authority=noise), "h100")


def test_the_join_is_added_after_the_vm_bootstrap() -> None:
    plain = render_user_data(config("aws"))
    vm, eks = libyaml_files.load(plain), libyaml_files.load(eks_cloud_config(plain, eks_node()))
    assert eks["write_files"][: len(vm["write_files"])] == vm["write_files"]
    assert eks["runcmd"][1] == [*vm["runcmd"][1], "gpufleet-eks-join.service"]
    assert eks["runcmd"][2] == [*vm["runcmd"][2], "gpufleet-eks-join.service"]
    assert eks["runcmd"][0] == ["systemctl", "daemon-reload"]  # the drop-ins are read before any unit starts


def joined_node(tmp_path: Path) -> Node:
    node = Node(tmp_path, config("aws"))
    install(eks_cloud_config(render_user_data(config("aws")), eks_node()), node.root)
    node.stub("bootstrap.sh", "exit 0")
    return node


def run_join(node: Node, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return node.run("gpufleet-eks-join", GPUFLEET_STATE=str(tmp_path / "state"),
                    GPUFLEET_EKS_BOOTSTRAP=str(node.stubs / "bootstrap.sh"))


def test_the_join_script_runs_the_images_bootstrap_with_the_flags_once(tmp_path: Path) -> None:
    node = joined_node(tmp_path)
    node.curl({"/latest/api/token": "tok-1", "/meta-data/instance-life-cycle": "spot"})
    first = run_join(node, tmp_path)
    assert first.returncode == 0, first.stderr
    (call,) = [c for c in node.calls() if c.startswith("bootstrap.sh ")]
    assert call == (
        f"bootstrap.sh train-eks --apiserver-endpoint {ENDPOINT} --b64-cluster-ca {CA} --dns-cluster-ip 10.100.0.10 "
        "--container-runtime nvidia-container-runtime "
        "--kubelet-extra-args --node-labels=gpufleet.io/fabric=efa,gpufleet.io/group=h100,"
        "nvidia.com/device-plugin.config=group-h100,node.kubernetes.io/lifecycle=spot "
        "--register-with-taints=nvidia.com/gpu=present:NoSchedule,example.com/only:NoExecute"
    )
    again = run_join(node, tmp_path)
    assert again.returncode == 0 and len([c for c in node.calls() if c.startswith("bootstrap.sh ")]) == 1


def test_without_metadata_the_node_joins_without_the_lifecycle_label(tmp_path: Path) -> None:
    node = joined_node(tmp_path)
    run = run_join(node, tmp_path)
    assert run.returncode == 0 and "instance-life-cycle unreadable" in run.stderr
    (call,) = [c for c in node.calls() if c.startswith("bootstrap.sh ")]
    assert "node.kubernetes.io/lifecycle" not in call


def test_a_failed_bootstrap_fails_the_unit_and_is_tried_again_next_boot(tmp_path: Path) -> None:
    node = joined_node(tmp_path)
    node.stub("bootstrap.sh", "exit 1")
    assert run_join(node, tmp_path).returncode == 1
    assert not (tmp_path / "state/eks-joined").exists()


MEMLOCK_DROP_IN = "/etc/systemd/system/containerd.service.d/gpufleet-memlock.conf"


def test_efa_pods_get_unlimited_locked_memory_from_a_restarted_containerd(tmp_path: Path) -> None:
    files = node_files(eks_cloud_config(render_user_data(config("aws")), eks_node(efa=True)))
    assert files[MEMLOCK_DROP_IN]["content"] == "[Service]\nLimitMEMLOCK=infinity\n"
    node = Node(tmp_path, config("aws"))
    install(eks_cloud_config(render_user_data(config("aws")), eks_node(efa=True)), node.root)
    node.stub("bootstrap.sh", "exit 0")
    node.stub("systemctl", "exit 0")
    assert run_join(node, tmp_path).returncode == 0
    calls = node.calls()
    restart = calls.index("systemctl try-restart containerd.service")
    assert restart < next(i for i, c in enumerate(calls) if c.startswith("bootstrap.sh "))


def test_a_node_without_efa_keeps_containerds_limits(tmp_path: Path) -> None:
    assert MEMLOCK_DROP_IN not in node_files(eks_cloud_config(render_user_data(config("aws")), eks_node()))
    node = joined_node(tmp_path)
    node.stub("systemctl", "exit 0")
    assert run_join(node, tmp_path).returncode == 0
    assert not [c for c in node.calls() if c.startswith("systemctl ")]


def test_the_join_script_and_its_settings_are_shellcheck_clean(tmp_path: Path) -> None:
    files = node_files(eks_cloud_config(render_user_data(config("aws")), eks_node()))
    for index, path in enumerate(["/usr/local/sbin/gpufleet-eks-join", "/etc/gpufleet/eks.env"]):
        script = tmp_path / f"{index}.sh"
        script.write_text(files[path]["content"])
        result = subprocess.run([shellcheck(), "-s", "bash", str(script)], capture_output=True, text=True)
        assert result.returncode == 0, f"{path}:\n{result.stdout}"
