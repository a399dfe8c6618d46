"""The shipped ebmgn8v stack turned slurm on Alibaba Cloud (its key created in a KMS instance), as the engine records
it: the head node (private, metadata in hardened mode, its system disk on the stack key, its own RAM role), its
security group between it and the nodes, the munge key's OOS secret parameter (a stand-in value Pulumi never writes
again), the RAM statements with their resources, and the user data of the head and of the nodes (gzipped, as
cloud-init reads it). No resource holds the key."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import libyaml_files
import pytest
from conftest import of_type, one, write_stack
from slurm_stacks import cloud_config, files_of, named, slurm_cluster

from components.bootstrap.cloud_init import cloud_part
from components.clouds.alicloud.slurm_head import MUNGE_UNSET
from gpufleet.clouds.alicloud.mock_answers import ACCOUNT
from gpufleet.plan.planner import PlanResult, plan_stack

INSTANCE = "alicloud:ecs/instance:Instance"
SG = "alicloud:ecs/securityGroup:SecurityGroup"
RULE = "alicloud:ecs/securityGroupRule:SecurityGroupRule"
PARAMETER = "alicloud:oos/secretParameter:SecretParameter"
POLICY = "alicloud:ram/policy:Policy"
ROLE = "alicloud:ram/role:Role"
ATTACHMENT = "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment"
KEY = "alicloud:kms/key:Key"
GROUP = "alicloud:ess/scalingGroup:ScalingGroup"
CONFIGURATION = "alicloud:ess/scalingConfiguration:ScalingConfiguration"
HEAD = "train-dev-slurm-head"
MUNGE = "gpufleet-train-dev-slurm-munge-key"
REGION = "cn-wulanchabu"
KMS_INSTANCE = "kst-wlc66c2fa1dw0gjn6jx3r"


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> PlanResult:
    cluster = slurm_cluster("alicloud-train-ebmgn8v")
    cluster["network"]["admin_cidrs"] = ["198.51.100.0/24"]
    cluster["storage"] = {**cluster["storage"], "kms_key": "create", "dkms_instance_id": KMS_INSTANCE}
    return plan_stack(write_stack(tmp_path_factory.mktemp("stacks"), "slurm-ebmgn8v", cluster))


def _statements(policy: Any) -> list[dict[str, Any]]:
    return json.loads(policy.inputs["policyDocument"])["Statement"]


def _value(secret: Any) -> Any:
    """A secret input's value, out of the engine's secret wrapper."""
    return secret["value"] if isinstance(secret, dict) else secret


def test_the_head_node_is_private_with_hardened_metadata_and_an_encrypted_disk(plan: PlanResult) -> None:
    head, key = one(plan, INSTANCE), one(plan, KEY)
    inputs = head.inputs
    assert (inputs["instanceType"], inputs["instanceChargeType"]) == ("ecs.g7.xlarge", "PostPaid")
    assert inputs["internetMaxBandwidthOut"] == 0
    # No elastic address is bound to it (the NAT gateway's EIPs bind to the gateway).
    assert all(head.urn not in r.depends_on for r in of_type(plan, "alicloud:ecs/eipAssociation:EipAssociation"))
    assert (inputs["httpEndpoint"], inputs["httpTokens"], inputs["httpPutResponseHopLimit"]) == (
        "enabled", "required", 1)
    assert (inputs["systemDiskEncrypted"], inputs["systemDiskCategory"], inputs["systemDiskSize"]) == (
        True, "cloud_essd", 100)
    assert head.property_dependencies["systemDiskKmsKeyId"] == (key.urn,)
    # In the cluster's vSwitch of its zone, in its own security group, with its own role.
    vswitch = named(plan, "alicloud:vpc/switch:Switch", "train-net-cn-wulanchabu-c")
    assert head.property_dependencies["vswitchId"] == (vswitch.urn,)
    assert head.property_dependencies["securityGroups"] == (named(plan, SG, HEAD).urn,)
    assert head.property_dependencies["roleName"] == (named(plan, ROLE, f"{HEAD}-role").urn,)
    assert inputs["tags"]["gpufleet:role"] == "slurm-head"


def test_the_heads_security_group_admits_slurm_from_the_nodes_only(plan: PlanResult) -> None:
    head_sg, nodes_sg = named(plan, SG, HEAD), named(plan, SG, "train-nodes")
    rules = {r.name: r for r in of_type(plan, RULE) if r.name.startswith(HEAD)}
    on_head = {name: r for name, r in rules.items() if r.property_dependencies["securityGroupId"] == (head_sg.urn,)}
    assert {name: (r.inputs["type"], r.inputs["ipProtocol"], r.inputs["portRange"]) for name, r in on_head.items()} == {
        f"{HEAD}-in-slurmctld": ("ingress", "tcp", "6817/6817"),
        f"{HEAD}-in-srun": ("ingress", "tcp", "60001/63000"),
        f"{HEAD}-in-ssh-0": ("ingress", "tcp", "22/22"),
    }
    for name in (f"{HEAD}-in-slurmctld", f"{HEAD}-in-srun"):
        assert rules[name].property_dependencies["sourceSecurityGroupId"] == (nodes_sg.urn,)
        assert "cidrIp" not in rules[name].inputs
    assert rules[f"{HEAD}-in-ssh-0"].inputs["cidrIp"] == "198.51.100.0/24"
    # The nodes' group admits slurmd from the head's group, nothing wider.
    slurmd = rules[f"{HEAD}-nodes-in-slurmd"]
    assert slurmd.property_dependencies["securityGroupId"] == (nodes_sg.urn,)
    assert slurmd.property_dependencies["sourceSecurityGroupId"] == (head_sg.urn,)
    assert (slurmd.inputs["portRange"], slurmd.inputs["nicType"]) == ("6818/6818", "intranet")


def test_the_munge_key_parameter_holds_a_stand_in_on_the_stack_key_and_is_never_written_again(
        plan: PlanResult) -> None:
    parameter, key = one(plan, PARAMETER), one(plan, KEY)
    assert parameter.inputs["secretParameterName"] == MUNGE
    assert (parameter.inputs["type"], _value(parameter.inputs["value"])) == ("Secret", MUNGE_UNSET)
    assert parameter.property_dependencies["keyId"] == (key.urn,)
    assert parameter.inputs["dkmsInstanceId"] == KMS_INSTANCE
    assert parameter.ignore_changes == ("value",)
    assert parameter.urn in one(plan, INSTANCE).depends_on
    # No KMS secret resource: its read would put the key in state (slurm_head.py).
    assert not of_type(plan, "alicloud:kms/secret:Secret")


def test_the_heads_role_reaches_its_munge_key_and_the_clusters_groups_only(plan: PlanResult) -> None:
    role, group, key = named(plan, ROLE, f"{HEAD}-role"), one(plan, GROUP), one(plan, KEY)
    trust = json.loads(role.inputs["assumeRolePolicyDocument"])
    assert trust["Statement"][0]["Principal"] == {"Service": ["ecs.aliyuncs.com"]}
    policy = named(plan, POLICY, f"{HEAD}-policy")
    assert group.urn in policy.property_dependencies["policyDocument"]
    assert key.urn in policy.property_dependencies["policyDocument"]
    statements = {tuple(s["Action"]): s["Resource"] for s in _statements(policy)}
    (key_resource,) = statements[("kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey")]
    assert key_resource.startswith(f"acs:kms:{REGION}:{ACCOUNT}:key/key-")
    (group_resource,) = statements[("ess:ModifyScalingGroup", "ess:RemoveInstances")]
    assert group_resource.startswith(f"acs:ess:{REGION}:{ACCOUNT}:scalinggroup/asg-")
    assert statements == {
        ("oos:GetSecretParameter", "oos:UpdateSecretParameter"): [
            f"acs:oos:{REGION}:{ACCOUNT}:secretparameter/{MUNGE}"],
        ("kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"): [key_resource],
        ("ess:DescribeScalingGroups",): ["*"],
        ("ess:ModifyScalingGroup", "ess:RemoveInstances"): [group_resource],
    }
    attachment = named(plan, ATTACHMENT, f"{HEAD}-policy")
    assert attachment.property_dependencies["roleName"] == (role.urn,)
    assert attachment.property_dependencies["policyName"] == (policy.urn,)


def test_the_nodes_role_reads_the_munge_key_and_nothing_more_of_it(plan: PlanResult) -> None:
    policy = named(plan, POLICY, "train-node-node")
    statements = _statements(policy)
    assert {"Effect": "Allow", "Action": ["oos:GetSecretParameter"],
            "Resource": [f"acs:oos:{REGION}:{ACCOUNT}:secretparameter/{MUNGE}"]} in statements
    (decrypt,) = [s for s in statements if s["Action"] == ["kms:Decrypt"]]
    assert decrypt["Resource"][0].startswith(f"acs:kms:{REGION}:{ACCOUNT}:key/key-")
    actions = [a for s in statements for a in s["Action"]]
    assert "oos:UpdateSecretParameter" not in actions and "kms:Encrypt" not in actions


def test_the_heads_user_data_carries_alibabas_script_part_and_its_parameter(plan: PlanResult) -> None:
    files = files_of(cloud_config(one(plan, INSTANCE).inputs["userData"]))
    assert files["/usr/local/lib/gpufleet/slurm-cloud.sh"] == cloud_part("slurm-alicloud.sh", "alicloud")
    settings = files["/etc/gpufleet/bootstrap.env"].splitlines()
    assert f"GPUFLEET_MUNGE_SECRET={MUNGE}" in settings and f"GPUFLEET_REGION={REGION}" in settings
    assert "ClusterName=train" in files["/etc/slurm/slurm.conf"]
    assert "/etc/munge/munge.key" not in files


def test_the_nodes_join_the_head_after_their_check_in_gzipped_user_data(plan: PlanResult) -> None:
    head, configuration = one(plan, INSTANCE), one(plan, CONFIGURATION)
    packed = base64.b64decode(configuration.inputs["userData"])
    assert packed.startswith(b"\x1f\x8b")  # gzip: the join does not fit Alibaba's 16 KB plain
    assert len(packed) <= 16384
    document = libyaml_files.load(gzip.decompress(packed).decode())
    files = files_of(document)
    assert files["/usr/local/lib/gpufleet/slurm-cloud.sh"] == cloud_part("slurm-alicloud.sh", "alicloud")
    settings = files["/etc/gpufleet/slurm.env"].splitlines()
    assert f"GPUFLEET_MUNGE_SECRET={MUNGE}" in settings
    (server,) = [line for line in settings if line.startswith("GPUFLEET_SLURM_SERVER=")]
    assert server.startswith("GPUFLEET_SLURM_SERVER=10.0.") and server.endswith(":6817")
    assert head.urn in configuration.property_dependencies["userData"]
    assert files["/etc/gpufleet/slurmd-registration"].startswith(
        "ecs.ebmgn8v.48xlarge cn-wulanchabu-c /usr/sbin/slurmd --systemd -Z -N h20-@INSTANCE_ID@")
    assert "Requires=gpufleet-health.service" in files["/etc/systemd/system/gpufleet-slurm-join.service"]


def test_the_plan_says_what_nobody_has_confirmed_and_refuses_nothing_of_slurm(plan: PlanResult) -> None:
    warnings = plan.summary["warnings"]
    assert any("OOS's API reference says a secret parameter's reader and writer need KMS permissions" in w
               for w in warnings)
    assert any("the head node boots the cluster's uefi image; the catalog lists no boot modes for ecs.g7.xlarge" in w
               for w in warnings)
    assert "scheduler.kind" not in [r["field"] for r in plan.summary.get("refusals", [])]


def test_a_brought_node_role_is_told_what_it_must_allow(tmp_path: Path) -> None:
    cluster = slurm_cluster("alicloud-train-ebmgn8v")
    cluster["identity"] = {**cluster.get("identity", {}), "ram_role_name": "my-gpu-nodes"}
    warnings = plan_stack(write_stack(tmp_path, "slurm-brought-role", cluster)).summary["warnings"]
    assert any(f"oos:GetSecretParameter on the munge key's parameter {MUNGE}" in w for w in warnings)


def test_the_pack_passes_the_head_node_its_role_and_its_security_group(plan: PlanResult) -> None:
    # Only the unbaked image (every node of this stack boots it) is left to name on the head node.
    ours = {r.urn for r in plan.resources if r.name.startswith(HEAD) or r.name in (MUNGE, "train-node-node")}
    found = [(v["policy"], v["message"]) for v in plan.policies["violations"] if v.get("urn") in ours]
    assert [policy for policy, _ in found] == ["alicloud-image-unbaked"], found
