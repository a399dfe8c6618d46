"""The shipped p5 stack turned slurm on AWS, as the engine records it: the head node (private, IMDSv2, encrypted, its
role least privilege), the security groups between it and the nodes, the munge key's secret without a value, and the
user data of the head and of the nodes (gunzipped as cloud-init reads it)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from conftest import of_type, one, write_stack
from parliament import analyze_policy_string
from slurm_stacks import cloud_config, files_of, named, slurm_cluster

from components.slurm.node_files import KEY_WAIT_SECONDS
from gpufleet.plan.planner import PlanResult, plan_stack

INSTANCE = "aws:ec2/instance:Instance"
SECRET = "aws:secretsmanager/secret:Secret"
SG = "aws:ec2/securityGroup:SecurityGroup"
IN_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
OUT_RULE = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
POLICY = "aws:iam/rolePolicy:RolePolicy"
LT = "aws:ec2/launchTemplate:LaunchTemplate"


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> PlanResult:
    cluster = slurm_cluster("aws-train-p5")
    cluster["scheduler"] = {"kind": "slurm"}  # the head node's type: the catalog's default CPU type
    return plan_stack(write_stack(tmp_path_factory.mktemp("stacks"), "slurm-p5", cluster))


def test_the_head_node_is_private_on_imdsv2_and_the_stack_key(plan: PlanResult) -> None:
    head = named(plan, INSTANCE, "train-dev-slurm-head")
    key = one(plan, "aws:kms/key:Key")
    inputs = head.inputs
    assert inputs["associatePublicIpAddress"] is False
    assert inputs["instanceType"] == "m7i.xlarge"
    assert inputs["metadataOptions"] == {"httpEndpoint": "enabled", "httpPutResponseHopLimit": 1,
                                         "httpTokens": "required"}
    assert inputs["rootBlockDevice"]["encrypted"] is True
    assert inputs["rootBlockDevice"]["volumeSize"] == 100
    assert head.property_dependencies["rootBlockDevice"] == (key.urn,)
    assert inputs["tags"]["gpufleet:role"] == "slurm-head"
    assert "keyName" not in inputs  # reached by SSM Session Manager
    subnets = {s.urn for s in of_type(plan, "aws:ec2/subnet:Subnet") if s.inputs["mapPublicIpOnLaunch"] is False}
    assert set(head.property_dependencies["subnetId"]) <= subnets
    assert head.property_dependencies["vpcSecurityGroupIds"] == (named(plan, SG, "train-dev-slurm-head").urn,)


def test_the_munge_key_secret_is_on_the_stack_key_and_has_no_value(plan: PlanResult) -> None:
    secret = named(plan, SECRET, "train-dev-munge-key")
    assert secret.property_dependencies["kmsKeyId"] == (one(plan, "aws:kms/key:Key").urn,)
    assert not [r for r in plan.resources if r.type.startswith("aws:secretsmanager/secretVersion")]
    assert not {"secretString", "secretBinary"} & set(secret.inputs)


def _rules(plan: PlanResult, typ: str) -> set[tuple[str, int, int, str]]:
    head_sg, nodes = named(plan, SG, "train-dev-slurm-head").urn, named(plan, SG, "train-nodes").urn
    return {(r.name, r.inputs["fromPort"], r.inputs["toPort"], r.inputs.get("cidrIpv4")
             or ("nodes" if r.property_dependencies["referencedSecurityGroupId"] == (nodes,) else "?"))
            for r in of_type(plan, typ) if r.property_dependencies["securityGroupId"] == (head_sg,)}


def test_the_head_admits_slurmctld_and_srun_from_the_nodes_only(plan: PlanResult) -> None:
    assert "ingress" not in named(plan, SG, "train-dev-slurm-head").inputs  # its rules are resources of their own
    assert _rules(plan, IN_RULE) == {("train-dev-slurm-head-in-slurmctld", 6817, 6817, "nodes"),
                                     ("train-dev-slurm-head-in-srun", 60001, 63000, "nodes")}
    assert _rules(plan, OUT_RULE) == {("train-dev-slurm-head-out-slurmd", 6818, 6818, "nodes"),
                                      ("train-dev-slurm-head-out-https", 443, 443, "0.0.0.0/0")}


def test_the_nodes_admit_slurmd_from_the_head_and_reach_slurmctld_and_srun(plan: PlanResult) -> None:
    nodes = named(plan, SG, "train-nodes")
    head_sg = named(plan, SG, "train-dev-slurm-head").urn
    assert head_sg in nodes.property_dependencies["ingress"] and head_sg in nodes.property_dependencies["egress"]
    head_rules = [("in", r["fromPort"], r["toPort"]) for r in nodes.inputs["ingress"] if "Slurm" in r["description"]]
    head_rules += [("out", r["fromPort"], r["toPort"]) for r in nodes.inputs["egress"] if "Slurm" in r["description"]]
    assert sorted(head_rules) == [("in", 6818, 6818), ("out", 6817, 6817), ("out", 60001, 63000)]


def _policy(plan: PlanResult, name: str) -> dict[str, Any]:
    return json.loads(named(plan, POLICY, name).inputs["policy"])


def test_the_head_role_reaches_its_secret_key_and_groups_only(plan: PlanResult) -> None:
    statements = {s["Sid"]: s for s in _policy(plan, "train-dev-slurm-head-head")["Statement"]}
    secret_arn = statements["MungeKeySecret"]["Resource"]
    assert re.fullmatch(r"arn:aws:secretsmanager:us-east-1:\d{12}:secret:train-dev-munge-key-[\w-]+", secret_arn)
    assert statements["MungeKeySecret"]["Action"] == ["secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue",
                                                      "secretsmanager:PutSecretValue"]
    assert statements["MungeKeyEncryption"]["Action"] == ["kms:Decrypt", "kms:GenerateDataKey"]
    assert statements["MungeKeyEncryption"]["Condition"] == {
        "StringEquals": {"kms:ViaService": "secretsmanager.us-east-1.amazonaws.com"}}
    assert statements["ReadGroups"] == {"Sid": "ReadGroups", "Effect": "Allow", "Resource": "*",
                                        "Action": ["autoscaling:DescribeAutoScalingGroups"]}
    assert statements["ScaleOwnGroups"]["Action"] == ["autoscaling:SetDesiredCapacity",
                                                      "autoscaling:TerminateInstanceInAutoScalingGroup"]
    assert statements["ScaleOwnGroups"]["Resource"] == [
        "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:*:autoScalingGroupName/gpufleet-train-dev-h100"]
    assert set(statements) == {"MungeKeySecret", "MungeKeyEncryption", "ReadGroups", "ScaleOwnGroups"}
    attached = [r.inputs["policyArn"] for r in of_type(plan, "aws:iam/rolePolicyAttachment:RolePolicyAttachment")
                if r.name == "train-dev-slurm-head-ssm"]
    assert attached == ["arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"]


def test_the_nodes_read_the_munge_key_and_nothing_more_of_it(plan: PlanResult) -> None:
    statements = {s["Sid"]: s for s in _policy(plan, "train-node-node")["Statement"]}
    head = {s["Sid"]: s for s in _policy(plan, "train-dev-slurm-head-head")["Statement"]}
    assert statements["ReadMungeKey"] == {"Sid": "ReadMungeKey", "Effect": "Allow",
                                          "Action": ["secretsmanager:GetSecretValue"],
                                          "Resource": head["MungeKeySecret"]["Resource"]}
    assert statements["MungeKeyDecrypt"]["Action"] == ["kms:Decrypt"]
    assert statements["MungeKeyDecrypt"]["Resource"] == head["MungeKeyEncryption"]["Resource"]


def test_parliament_finds_nothing_in_the_slurm_policies(plan: PlanResult) -> None:
    for name in ("train-dev-slurm-head-head", "train-node-node"):
        findings = analyze_policy_string(named(plan, POLICY, name).inputs["policy"]).findings
        assert [(f.issue, f.detail) for f in findings] == [], name


def test_the_head_user_data_starts_munge_and_slurmctld_after_its_key_step(plan: PlanResult) -> None:
    document = cloud_config(named(plan, INSTANCE, "train-dev-slurm-head").inputs["userDataBase64"])
    files = files_of(document)
    conf = files["/etc/slurm/slurm.conf"]
    assert "SlurmctldParameters=enable_configless" in conf.splitlines()
    assert "SlurmctldHost=@HEAD_HOST@(@HEAD_ADDRESS@)" in conf.splitlines()
    # gres.conf includes the node's own (the node writes it at boot); the head's is empty.
    assert files["/etc/slurm/gres.conf"] == "Include /etc/gpufleet/slurm-gres.conf\n"
    assert files["/etc/gpufleet/slurm-gres.conf"] == ""
    # The fabric's switch, empty until nodes register in it (components/slurm/topology.py).
    assert files["/etc/slurm/topology.conf"] == "SwitchName=fabric-h100\n"
    assert "TopologyPlugin=topology/tree" in conf.splitlines()
    power = json.loads(files["/etc/slurm/gpufleet-power.json"])
    assert power["groups"][0]["scaling_group"] == "gpufleet-train-dev-h100"
    assert files["/etc/systemd/system/munge.service.d/gpufleet.conf"] == (
        "[Unit]\nRequires=gpufleet-slurm-head.service\nAfter=gpufleet-slurm-head.service\n")
    assert files["/etc/systemd/system/slurmctld.service.d/gpufleet.conf"] == (
        "[Unit]\nRequires=munge.service\nAfter=munge.service\n")
    assert "munge_key_store" in files["/usr/local/sbin/gpufleet-slurm-head"]
    assert "secretsmanager put-secret-value" in files["/usr/local/lib/gpufleet/slurm-cloud.sh"]
    settings = files["/etc/gpufleet/bootstrap.env"]
    assert re.search(r"^GPUFLEET_MUNGE_SECRET=arn:aws:secretsmanager:us-east-1:\d{12}:secret:train-dev-munge-key-",
                     settings, re.M)
    units = ["gpufleet-slurm-head.service", "munge.service", "slurmctld.service", "gpufleet-slurm-watch.timer"]
    assert document["runcmd"] == [
        ["systemctl", "daemon-reload"], ["systemctl", "enable", *units], ["systemctl", "start", "--no-block", *units]]
    # Capacity follows the queue: the resume and suspend programs slurm.conf names, and the queue watcher's units.
    for program in ("ResumeProgram", "SuspendProgram"):
        path = next(line.split("=", 1)[1] for line in conf.splitlines() if line.startswith(f"{program}="))
        assert "/usr/local/bin/gpufleet-slurm-power" in files[path]
    assert "gpufleet-slurm-power watch" in files["/etc/systemd/system/gpufleet-slurm-watch.service"]
    # The head node never runs the node check, and no key is in its user data.
    assert not [path for path in files if "health" in path or path.endswith("munge.key")]
    head = named(plan, INSTANCE, "train-dev-slurm-head")
    assert head.property_dependencies["userDataBase64"] == (named(plan, SECRET, "train-dev-munge-key").urn,)


def test_the_nodes_join_configless_after_the_node_check(plan: PlanResult) -> None:
    template = one(plan, LT)
    document = cloud_config(template.inputs["userData"])
    files = files_of(document)
    assert files["/etc/systemd/system/gpufleet-slurm-join.service"].splitlines()[2:4] == [
        "Requires=gpufleet-health.service", "After=gpufleet-health.service"]
    settings = dict(line.split("=", 1) for line in files["/etc/gpufleet/slurm.env"].splitlines()
                    if not line.startswith("#"))
    assert re.fullmatch(r"\d+\.\d+\.\d+\.\d+:6817", settings["GPUFLEET_SLURM_SERVER"])
    assert settings["GPUFLEET_SLURM_KEY_WAIT_SECONDS"] == str(KEY_WAIT_SECONDS)
    server = settings["GPUFLEET_SLURM_SERVER"]
    assert files["/etc/gpufleet/slurmd-registration"] == (
        "p5.48xlarge us-east-1a /usr/sbin/slurmd --systemd -Z -N h100-@INSTANCE_ID@ "
        f'--conf "Gres=gpu:h100:8 Feature=h100,p5.48xlarge,efa,us-east-1a Topology=default:fabric-h100"'
        f' --conf-server {server}\n')
    drop_in = files["/etc/systemd/system/slurmd.service.d/gpufleet.conf"]
    assert "TimeoutStartSec=infinity\n" in drop_in and "Requires=gpufleet-health.service\n" in drop_in
    assert files["/usr/local/lib/gpufleet/slurm/health-check"].startswith("#!/bin/sh\n")
    enable = next(line for line in document["runcmd"] if line[:2] == ["systemctl", "enable"])
    assert enable[-1] == "gpufleet-slurm-join.service" and "gpufleet-health.service" in enable
    # The address and the secret are the head node's and the secret's.
    head, secret = named(plan, INSTANCE, "train-dev-slurm-head"), named(plan, SECRET, "train-dev-munge-key")
    assert {head.urn, secret.urn} <= set(template.property_dependencies["userData"])
