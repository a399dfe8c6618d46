"""The example jobs (examples/kubernetes/<cloud>/) are what the CRDs of the operators the stack installs
(scheduler.job_operators) accept, and their pod templates are pods the API server of each supported version
accepts."""

from __future__ import annotations

import copy
from collections.abc import ItemsView
from pathlib import Path

import libyaml_files
import pytest
from conftest import REPO
from kubernetes_schemas import UnknownField, plan_versions, validate

from components.kubernetes.alicloud import ERDMA_RESOURCE
from components.kubernetes.job_operators import operator_objects
from components.kubernetes.node_check import NODE_CHECK_LABEL, NODE_CHECK_TAINT
from gpufleet.catalog import load_catalog
from gpufleet.lock import load_lock
from policies.kubernetes.workloads import REPLICA_SPECS

EXAMPLES = REPO / "examples" / "kubernetes"
PINS = load_lock().kubernetes_components
assert PINS is not None
# The CRDs the stack registers for its default job operators, as it registers them.
CRDS = [obj for name in ("mpi", "training") for obj in operator_objects(name, PINS)
        if obj["kind"] == "CustomResourceDefinition"]
JOBS = sorted(EXAMPLES.glob("*/*.yaml"))


def job(path: Path) -> dict:
    return libyaml_files.load(path.read_text())


def templates(obj: dict) -> dict[str, dict]:
    """Replica type -> its pod template, as a core/v1 PodTemplate object."""
    key = REPLICA_SPECS[f"kubernetes:{obj['apiVersion']}:{obj['kind']}"]
    return {name: {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": name.lower()},
                   "template": spec["template"]} for name, spec in obj["spec"][key].items()}


def test_the_aws_examples_are_an_mpijob_and_a_pytorchjob():
    kinds = {(job(p)["apiVersion"], job(p)["kind"]) for p in JOBS if p.parent.name == "aws"}
    assert kinds == {("kubeflow.org/v2beta1", "MPIJob"), ("kubeflow.org/v1", "PyTorchJob")}


@pytest.mark.parametrize("path", JOBS, ids=lambda p: f"{p.parent.name}/{p.name}")
@pytest.mark.parametrize("version", plan_versions())
def test_example_validates_against_its_crd_and_its_pods_against_the_api(path, version):
    obj = job(path)
    validate(obj, version, CRDS)
    pods = templates(obj)
    assert pods, "the job names no pod templates: nothing of its pods was validated"
    for template in pods.values():
        validate(template, version)


@pytest.mark.parametrize("path", [p for p in JOBS if p.parent.name == "aws"], ids=lambda p: p.name)
def test_aws_workers_ask_for_gpus_efa_and_hugepages_with_the_efa_settings(path):
    obj = job(path)
    (worker,) = templates(obj)["Worker"]["template"]["spec"]["containers"]
    wanted = {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 32, "hugepages-2Mi": "5120Mi"}
    assert worker["resources"]["limits"].items() >= wanted.items()
    assert worker["resources"]["requests"].items() >= wanted.items()
    text = path.read_text()
    assert "FI_PROVIDER" in text and "FI_EFA_FORK_SAFE" in text and "FI_EFA_USE_DEVICE_RDMA" in text


def nccl_settings(obj: dict) -> ItemsView[str, str]:
    """NCCL_* settings a job passes: container env, or `mpirun -x NAME=value` in the launcher's command."""
    found = {}
    for template in templates(obj).values():
        for container in template["template"]["spec"]["containers"]:
            found |= {e["name"]: e.get("value") for e in container.get("env", []) if e["name"].startswith("NCCL_")}
            found |= dict(arg.split("=", 1) for arg in container.get("command", []) if arg.startswith("NCCL_"))
    return found.items()


def test_the_azure_examples_are_an_mpijob_and_a_pytorchjob():
    kinds = {(job(p)["apiVersion"], job(p)["kind"]) for p in JOBS if p.parent.name == "azure"}
    assert kinds == {("kubeflow.org/v2beta1", "MPIJob"), ("kubeflow.org/v1", "PyTorchJob")}


@pytest.mark.parametrize("path", [p for p in JOBS if p.parent.name == "azure"], ids=lambda p: p.name)
def test_azure_workers_ask_for_gpus_and_infiniband_with_ipc_lock_and_azures_nccl_settings(path):
    obj = job(path)
    spec = templates(obj)["Worker"]["template"]["spec"]
    (worker,) = spec["containers"]
    wanted = {"nvidia.com/gpu": 8, "rdma/ib": 1}
    assert worker["resources"]["limits"].items() >= wanted.items()
    assert worker["resources"]["requests"].items() >= wanted.items()
    assert "IPC_LOCK" in worker["securityContext"]["capabilities"]["add"]
    assert spec["nodeSelector"] == {"node.kubernetes.io/instance-type": "Standard_ND96isr_H100_v5"}
    # Never the node-check taint: a job must not land on a node that has not passed the check.
    assert all(t.get("key") not in (NODE_CHECK_TAINT[0], NODE_CHECK_LABEL[0]) for t in spec.get("tolerations", []))
    assert nccl_settings(obj) >= {"NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "^mlx5_8", "NCCL_NET_GDR_LEVEL": "SYS",
                                  "NCCL_TOPO_FILE": "/opt/nvidia-topology/topo.xml"}.items()
    mounts = {m["mountPath"] for m in worker["volumeMounts"]}
    assert "/opt/nvidia-topology" in mounts and "/dev/shm" in mounts


def test_the_alicloud_examples_are_an_mpijob_and_a_pytorchjob():
    kinds = {(job(p)["apiVersion"], job(p)["kind"]) for p in JOBS if p.parent.name == "alicloud"}
    assert kinds == {("kubeflow.org/v2beta1", "MPIJob"), ("kubeflow.org/v1", "PyTorchJob")}


@pytest.mark.parametrize("path", [p for p in JOBS if p.parent.name == "alicloud"], ids=lambda p: p.name)
def test_alicloud_workers_ask_for_gpus_and_erdma_on_the_host_network_with_alibabas_nccl_settings(path):
    obj = job(path)
    spec = templates(obj)["Worker"]["template"]["spec"]
    (worker,) = spec["containers"]
    wanted = {"nvidia.com/gpu": 8, ERDMA_RESOURCE: 1}
    assert worker["resources"]["limits"].items() >= wanted.items()
    assert worker["resources"]["requests"].items() >= wanted.items()
    assert "IPC_LOCK" in worker["securityContext"]["capabilities"]["add"]
    assert (spec["hostNetwork"], spec["dnsPolicy"]) == (True, "ClusterFirstWithHostNet")
    (instance_type,) = spec["nodeSelector"].values()
    row = next(r for r in load_catalog().instances() if r.name == instance_type)
    assert row.fabric.kind == "erdma" and row.gpu.count == 8
    assert all(t.get("key") not in (NODE_CHECK_TAINT[0], NODE_CHECK_LABEL[0]) for t in spec.get("tolerations", []))
    assert nccl_settings(obj) >= {"NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "erdma",
                                  "NCCL_SOCKET_IFNAME": "eth0"}.items()
    # The GID index is NCCL's own choice: the two eRDMA devices' RoCE v2 GIDs can sit at different indexes.
    assert "NCCL_IB_GID_INDEX" not in dict(nccl_settings(obj))


def test_alicloud_mpi_workers_on_the_host_network_keep_off_the_nodes_sshd_port():
    """hostNetwork workers share the node's ports: their sshd and the launcher's ssh use 2222, not the node's 22."""
    obj = job(EXAMPLES / "alicloud" / "nccl-allreduce.yaml")
    pods = templates(obj)
    (worker,) = pods["Worker"]["template"]["spec"]["containers"]
    assert worker["command"] == ["/usr/sbin/sshd", "-De", "-p", "2222"]
    (launcher,) = pods["Launcher"]["template"]["spec"]["containers"]
    command = launcher["command"]
    assert command[command.index("plm_rsh_args") + 1] == "-p 2222"


def test_a_misspelled_field_is_refused():
    obj = copy.deepcopy(job(EXAMPLES / "aws" / "nccl-allreduce.yaml"))
    obj["spec"]["slotPerWorker"] = obj["spec"].pop("slotsPerWorker")
    with pytest.raises(UnknownField, match=r"\.spec\.slotPerWorker not in its CRD's schema"):
        validate(obj, "1.35", CRDS)
    obj = copy.deepcopy(job(EXAMPLES / "aws" / "pytorch-ddp.yaml"))
    obj["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = "one"
    with pytest.raises(Exception, match="'one' is not of type 'integer'"):
        validate(obj, "1.35", CRDS)
