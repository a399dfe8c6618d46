"""The Alibaba Cloud cluster as the engine records it: ERIs, encryption, RAM policy, capacity, hooks, events."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import SHIPPED_STACKS, of_type, one, read_cluster, write_stack
from conftest import shipped_plan as shipped
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.plan.planner import PlanResult, plan_stack
from gpufleet.plan.record import RecordedResource
from gpufleet.resolve import resolve_cluster

CONFIG = "alicloud:ess/scalingConfiguration:ScalingConfiguration"
GROUP = "alicloud:ess/scalingGroup:ScalingGroup"
TEMPLATE = "alicloud:ecs/ecsLaunchTemplate:EcsLaunchTemplate"
TRAIN = "alicloud-train-ebmgn8v"
INFER = "alicloud-infer-gn7i"



def plan_json(tmp_path: Path, cluster: dict[str, Any]) -> Any:
    return CliRunner().invoke(app, ["plan", "--stack-file", str(write_stack(tmp_path, "variant", cluster)),
                                    "--format", "json"])


def test_train_plan_exits_0_as_json() -> None:
    args = ["plan", "--stack", TRAIN, "--stacks-dir", str(SHIPPED_STACKS), "--format", "json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    types = {r["type"] for r in json.loads(result.stdout)["resources"]}
    assert {CONFIG, GROUP, "alicloud:ess/lifecycleHook:LifecycleHook", "alicloud:cms/eventRule:EventRule"} <= types


# The fields terraform-provider-alicloud's network_interfaces set hashes (every Optional one of its element schema,
# resource_alicloud_ess_scaling_configuration.go:117-147; plugin SDK v1.17.2 serialize.go:89-113), by Pulumi name.
INTERFACE_HASH_FIELDS = ("instanceType", "ipv6AddressCount", "networkInterfaceTrafficMode", "securityGroupIds")


def _set_hash_key(interface: dict[str, Any]) -> str:
    """What the plugin SDK serialises a block to before hashing it: each field in key order, lists in order."""
    def value(field: str) -> str:
        found = interface.get(field)
        return ";".join(found) + ";" if isinstance(found, list) else "" if found is None else str(found)
    return "".join(f"{field}:{value(field)};" for field in sorted(INTERFACE_HASH_FIELDS))


def test_each_ebmgn8v_node_keeps_its_two_eris_through_the_providers_set() -> None:
    """network_interfaces is a TypeSet that keeps one element per hash (set.go:228-247): every block must differ
    in a hashed field, or a node gets one ERI of its two."""
    plan = shipped(TRAIN)
    config = one(plan, CONFIG)
    interfaces = config.inputs["networkInterfaces"]
    assert [(i["instanceType"], i["networkInterfaceTrafficMode"]) for i in interfaces] == [
        ("Primary", "Standard"), ("Secondary", "HighPerformance"), ("Secondary", "HighPerformance")]
    assert len({_set_hash_key(i) for i in interfaces}) == len(interfaces) == 3
    # Every interface is in the node security group; the second ERI also in its lane's group.
    groups = {g.inputs["securityGroupName"]: g for g in of_type(plan, "alicloud:ecs/securityGroup:SecurityGroup")}
    assert set(groups) == {"train-nodes", "train-eri-2"}
    node_sg = interfaces[0]["securityGroupIds"][0]
    assert [i["securityGroupIds"][0] for i in interfaces] == [node_sg] * 3
    assert [len(i["securityGroupIds"]) for i in interfaces] == [1, 1, 2]
    assert {groups["train-nodes"].urn, groups["train-eri-2"].urn} <= set(config.property_dependencies[
        "networkInterfaces"])
    assert config.inputs["internetMaxBandwidthOut"] == 0


def test_an_eri_lane_group_opens_only_its_own_members_to_each_other() -> None:
    plan = shipped(TRAIN)
    (lane,) = [g for g in of_type(plan, "alicloud:ecs/securityGroup:SecurityGroup")
               if g.inputs["securityGroupName"] == "train-eri-2"]
    rules = [r for r in of_type(plan, "alicloud:ecs/securityGroupRule:SecurityGroupRule")
             if r.property_dependencies.get("securityGroupId") == (lane.urn,)]
    (rule,) = rules
    assert rule.property_dependencies["sourceSecurityGroupId"] == (lane.urn,)
    assert (rule.inputs["type"], rule.inputs["ipProtocol"], rule.inputs["nicType"]) == ("ingress", "all", "intranet")
    assert "cidrIp" not in rule.inputs


def test_a_cluster_without_eris_makes_no_lane_group() -> None:
    names = [g.inputs["securityGroupName"] for g in of_type(shipped(INFER), "alicloud:ecs/securityGroup:SecurityGroup")]
    assert names == ["infer-nodes"]


INSTANCE = "kst-bjj62f1cb66fa42qo"  # a KMS instance id of the documented shape (kst-...)


def created_key(**changes: Any) -> dict[str, Any]:
    cluster = copy.deepcopy(read_cluster(TRAIN))
    cluster["storage"].update(kms_key="create", dkms_instance_id=INSTANCE)
    cluster.update(changes)
    return cluster


def test_disks_are_encrypted_with_a_rotating_key_in_the_stacks_kms_instance(tmp_path: Path) -> None:
    plan = plan_stack(write_stack(tmp_path, "created", created_key()))
    key = one(plan, "alicloud:kms/key:Key")
    assert key.inputs["dkmsInstanceId"] == INSTANCE
    # The instance decides the protection level (kms.Key protection_level is ignored with dkms_instance_id).
    assert "protectionLevel" not in key.inputs
    assert key.inputs["automaticRotation"] == "Enabled" and key.inputs["rotationInterval"] == "365d"
    assert key.inputs["deletionProtection"] == "Disabled" and key.protect is False
    config = one(plan, CONFIG)
    assert config.inputs["systemDiskEncrypted"] is True
    assert config.inputs["systemDiskKmsKeyId"].startswith("key-")
    assert key.urn in config.property_dependencies["systemDiskKmsKeyId"]


def test_shipped_stacks_bring_a_placeholder_key_their_users_replace() -> None:
    for stack in (TRAIN, "alicloud-infer-gn7i"):
        plan = shipped(stack)
        assert not of_type(plan, "alicloud:kms/key:Key")
        assert read_cluster(stack)["storage"]["kms_key"].startswith("REPLACE")


@pytest.mark.parametrize(("storage", "message"), [
    ({"kms_key": "create"}, "required with storage.kms_key: create: a key made outside a KMS instance is the "
                            "region's one default key"),
    ({"kms_key": "key-bjj62f1cb66fa42qo", "dkms_instance_id": INSTANCE}, "only with storage.kms_key: create"),
])
def test_a_created_key_needs_a_kms_instance_exit_2_naming_the_field(
    tmp_path, monkeypatch, capsys, storage, message
) -> None:
    from cli_run import run_main

    cluster = copy.deepcopy(read_cluster(TRAIN))
    cluster["storage"] = {k: v for k, v in cluster["storage"].items() if k != "kms_key"} | storage
    write_stack(tmp_path, "variant", cluster)
    monkeypatch.chdir(tmp_path)
    assert run_main(monkeypatch, "plan", "--stack", "variant", "--stacks-dir", str(tmp_path)) == 2
    err = capsys.readouterr().err
    assert "storage.dkms_instance_id" in err and message in err


def test_prod_protects_the_key(tmp_path: Path) -> None:
    cluster = created_key(environment="prod")
    key = one(plan_stack(write_stack(tmp_path, "prod", cluster)), "alicloud:kms/key:Key")
    assert key.protect is True and key.inputs["deletionProtection"] == "Enabled"


def _node_identity(plan: PlanResult, typ: str) -> RecordedResource:
    """The node identity's one resource of a type (the scale-out gate has a role and policy of its own)."""
    (found,) = [r for r in of_type(plan, typ) if "$gpufleet:alicloud:NodeIdentity$" in r.urn]
    return found


def test_ram_role_trusts_ecs_and_its_policy_has_no_wildcard_action() -> None:
    plan = shipped(TRAIN)
    trust = json.loads(_node_identity(plan, "alicloud:ram/role:Role").inputs["assumeRolePolicyDocument"])
    assert trust["Statement"][0]["Principal"] == {"Service": ["ecs.aliyuncs.com"]}
    document = json.loads(_node_identity(plan, "alicloud:ram/policy:Policy").inputs["policyDocument"])
    actions = [a for s in document["Statement"] for a in s["Action"]]
    assert actions and not [a for a in actions if "*" in a]
    # The node never completes a hook (the gate's role does); it only marks itself unhealthy in its own group.
    assert "ess:CompleteLifecycleAction" not in actions
    health = next(s for s in document["Statement"] if s["Action"] == ["ess:SetInstanceHealth"])
    (resource,) = health["Resource"]
    assert resource.startswith("acs:ess:cn-wulanchabu:") and "scalinggroup/asg-" in resource
    attachment = _node_identity(plan, "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment")
    assert attachment.inputs["policyType"] == "Custom"


def test_scaling_group_enabled_with_on_demand_base_and_spot_above() -> None:
    plan = shipped(TRAIN)
    group = one(plan, GROUP).inputs
    assert group["multiAzPolicy"] == "COST_OPTIMIZED"
    assert group["onDemandBaseCapacity"] == 1 and group["onDemandPercentageAboveBaseCapacity"] == 0
    assert group["spotInstanceRemedy"] is True and group["spotInstancePools"] >= 1
    assert len(group["vswitchIds"]) == 1
    config = one(plan, CONFIG).inputs
    assert config["enable"] is True and config["active"] is True
    assert config["spotStrategy"] == "SpotAsPriceGo"


def test_spot_max_price_limits_the_price(tmp_path: Path) -> None:
    cluster = copy.deepcopy(read_cluster(TRAIN))
    cluster["node_groups"][0]["spot_max_price"] = 40.5
    config = one(plan_stack(write_stack(tmp_path, "capped", cluster)), CONFIG).inputs
    assert config["spotStrategy"] == "SpotWithPriceLimit"
    assert config["spotPriceLimits"] == [{"instanceType": "ecs.ebmgn8v.48xlarge", "priceLimit": 40.5}]


def test_both_lifecycle_hooks() -> None:
    recorded = of_type(shipped(TRAIN), "alicloud:ess/lifecycleHook:LifecycleHook")
    hooks = {h.inputs["lifecycleTransition"]: h.inputs for h in recorded}
    assert set(hooks) == {"SCALE_OUT", "SCALE_IN"}
    # The stack's 300 s checkpoint grace plus the runbook's overhead; the checkpoint runbook completes it.
    assert hooks["SCALE_IN"]["heartbeatTimeout"] == 420 and hooks["SCALE_IN"]["defaultResult"] == "CONTINUE"
    assert hooks["SCALE_IN"]["notificationArn"].endswith(":oos/gpufleet-train-dev-scale-in-checkpoint")


def test_interruption_events_go_to_an_encrypted_logstore() -> None:
    plan = shipped(TRAIN)
    rule = one(plan, "alicloud:cms/eventRule:EventRule").inputs
    assert rule["eventPattern"]["nameLists"] == ["Instance:PreemptibleInstanceInterruption"]
    store = one(plan, "alicloud:log/store:Store").inputs
    assert store["encryptConf"]["enable"] is True
    assert rule["slsParameters"][0]["logStore"] == store["logstoreName"]


def _user_data(resource: RecordedResource) -> str:
    return base64.b64decode(resource.inputs["userData"]).decode()


def test_eri_nodes_guard_metadata_and_set_mtu_1400_as_the_documented_alternative_to_tokens() -> None:
    config = one(shipped(TRAIN), CONFIG)
    assert "httpTokens" not in config.inputs  # pulumi-alicloud's ScalingConfiguration has no such input
    assert config.inputs["tags"]["gpufleet:metadata-guard"] == "root-only"
    user_data = _user_data(config)
    assert "GPUFLEET_METADATA_GUARD=root-only" in user_data and "GPUFLEET_FABRIC_MTU=1400" in user_data
    # Without jumbo frames (a scaling configuration cannot turn them on) Alibaba's rule is 1400; the node check
    # asserts it. Before: 8500, which corrupts data on an instance without jumbo frames.
    assert '"fabric_mtu": 1400' in user_data


def test_groups_without_eris_require_metadata_tokens_from_their_launch_template() -> None:
    plan = shipped(INFER)
    template = one(plan, TEMPLATE).inputs
    assert template["httpTokens"] == "required" and template["systemDisk"]["encrypted"] is True
    group = one(plan, GROUP).inputs
    assert group["launchTemplateId"].startswith("lt-")
    # The 4-GPU fallback is gone: a spot group may launch any of its types first.
    assert [o["instanceType"] for o in group["launchTemplateOverrides"]] == ["ecs.gn7i-c8g1.2xlarge"]
    assert len(group["vswitchIds"]) == 2 and not of_type(plan, CONFIG)
    assert "GPUFLEET_FABRIC_MTU=''" in _user_data(one(plan, TEMPLATE))


def test_network_has_enhanced_nat_with_snat_per_vswitch_and_no_public_ingress() -> None:
    plan = shipped(INFER)
    assert one(plan, "alicloud:vpc/natGateway:NatGateway").inputs["natType"] == "Enhanced"
    assert len(of_type(plan, "alicloud:vpc/snatEntry:SnatEntry")) == 2
    rules = of_type(plan, "alicloud:ecs/securityGroupRule:SecurityGroupRule")
    assert [r.inputs.get("cidrIp") for r in rules] == [None]
    assert rules[0].inputs["ipProtocol"] == "all" and rules[0].inputs["sourceSecurityGroupId"].startswith("sg-")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"low_latency_groups": ["h20"]}, "node_groups[0].capacity"),
        ({"network": {"cidr": "10.42.0.0/16", "zones": ["cn-wulanchabu-b", "cn-wulanchabu-c"]}}, "node_groups[0].zone"),
        ({"node_groups": [{"name": "h20", "instance_types": ["ecs.ebmgn8v.48xlarge"], "size": {"desired": 1, "max": 2},
                           "provisioner": "fleet", "spot_max_price": 10}]}, "node_groups[0].provisioner"),
    ],
)
def test_bad_alibaba_stacks_exit_2_naming_the_field(tmp_path: Path, change: dict[str, Any], field: str) -> None:
    cluster = {**copy.deepcopy(read_cluster(TRAIN)), **change}
    result = plan_json(tmp_path, cluster)
    assert result.exit_code == 2, result.output
    assert field in result.stderr and "Traceback" not in result.output + result.stderr


def test_low_latency_on_demand_group_without_eris_gets_a_deployment_set(tmp_path: Path) -> None:
    cluster = copy.deepcopy(read_cluster(INFER))
    cluster["node_groups"][0].update(capacity="on-demand", zone="cn-beijing-h")
    cluster["low_latency_groups"] = ["a10"]
    plan = plan_stack(write_stack(tmp_path, "ll", cluster))
    assert one(plan, "alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet").inputs["strategy"] == "LowLatency"
    assert one(plan, TEMPLATE).inputs["deploymentSetId"].startswith("ds-")


def test_vswitch_too_small_for_max_nodes_times_their_addresses_exits_2(tmp_path: Path) -> None:
    cluster = copy.deepcopy(read_cluster(TRAIN))
    cluster["network"]["cidr"] = "10.42.0.0/24"  # four /26 vSwitches: 60 usable addresses each
    cluster["node_groups"][0]["size"]["max"] = 20  # 20 nodes x (1 + 2 ERIs) + the NAT gateway = 61
    result = plan_json(tmp_path, cluster)
    assert result.exit_code == 2
    assert "network.cidr: 10.42.0.0/24 is too small: the vSwitch in cn-wulanchabu-c" in result.stderr
    assert "cannot hold 61 addresses" in result.stderr and "use a /23 or larger" in result.stderr


def test_eri_configuration_passes_the_providers_create_checks() -> None:
    """terraform-provider-alicloud's ess scaling configuration, as the bundled version reads it: security_group_id
    conflicts with security_group_ids and network_interfaces (schema), and Create refuses a configuration with
    neither security_group_id nor security_group_ids ("must be assigned")."""
    inputs = one(shipped(TRAIN), CONFIG).inputs
    assert "securityGroupId" not in inputs, "conflicts with networkInterfaces in the provider's schema"
    assert inputs.get("securityGroupIds"), "Create: security_group_id or security_group_ids must be assigned"
    (primary,) = [i for i in inputs["networkInterfaces"] if i["instanceType"] == "Primary"]
    assert inputs["securityGroupIds"] == primary["securityGroupIds"]


# Cost-optimised groups launch cheapest vCPU first (Auto Scaling "scaling policy"), not primary first.

def test_a_spot_fallback_with_another_gpu_count_is_refused_exit_2_naming_it(tmp_path, monkeypatch, capsys) -> None:
    """The gn7i stack as it shipped: a 4-GPU fallback to a 1-GPU primary in a spot group."""
    from cli_run import run_main

    cluster = copy.deepcopy(read_cluster("alicloud-infer-gn7i"))
    cluster["node_groups"][0]["instance_types"] = ["ecs.gn7i-c8g1.2xlarge", "ecs.gn7i-c32g1.32xlarge"]
    write_stack(tmp_path, "variant", cluster)
    monkeypatch.chdir(tmp_path)
    assert run_main(monkeypatch, "plan", "--stack", "variant", "--stacks-dir", str(tmp_path)) == 2
    err = capsys.readouterr().err
    assert "node_groups[0].instance_types[1]" in err and "ecs.gn7i-c32g1.32xlarge has 4 GPUs" in err
    assert "cheapest vCPU first, not primary first" in err
    cluster["node_groups"][0].update(capacity="on-demand", on_demand_base=0)  # PRIORITY: primary first
    resolve_cluster(cluster)


def _eight_gpu_spot_group(prices: dict[str, Any], capacity: str = "spot") -> dict[str, Any]:
    cluster = copy.deepcopy(read_cluster("alicloud-infer-gn7i"))
    cluster["node_groups"][0].update(
        instance_types=["ecs.gn7-c13g1.26xlarge", "ecs.gn7e-c16g1.32xlarge"], capacity=capacity,
        size={"min": 0, "desired": 1, "max": 4},
    )
    cluster["prices"] = prices
    return cluster


def test_a_cost_optimised_group_is_priced_at_its_dearest_type() -> None:
    prices = {"ecs.gn7-c13g1.26xlarge": {"on_demand": 20.0, "source": "test quote"},
              "ecs.gn7e-c16g1.32xlarge": {"on_demand": 30.0, "source": "test quote"}}
    (group,) = resolve_cluster(_eight_gpu_spot_group(prices)).groups
    assert group.cost is not None and group.cost.max_on_demand == 4 * 30.0
    (on_demand,) = resolve_cluster(_eight_gpu_spot_group(prices, capacity="on-demand")).groups
    # PRIORITY launches the primary first, but a fallback provisions the whole group when the primary has no
    # capacity: the budget's worst case is the dearest type at size.max on every cloud.
    assert on_demand.cost is not None and on_demand.cost.max_on_demand == 4 * 30.0
    assert on_demand.cost.desired_on_demand == 1 * 20.0  # what launches first
    del prices["ecs.gn7e-c16g1.32xlarge"]
    (unpriced,) = resolve_cluster(_eight_gpu_spot_group(prices)).groups
    assert unpriced.cost is None  # a fallback without a price: unknown, not the primary's
