"""AWS preflight checks against an offline account: moto behind the real boto3 clients (aws_preflight_account.py),
botocore's Stubber where moto has no answer. Each check has a failing and a passing case."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from aws_preflight_account import (  # noqa: F401  (moto: the module's account, a fixture)
    NAMES,
    P5_SPOT_TEST_CODE,
    REGION,
    baked_lock,
    cost_tag_client,
    moto,
    moto_account,
    on_demand_group,
    owned_ami,
    patch_quotas,
    stubbed,
    throttle,
    train_cluster,
)

from components.clouds.aws.budget import CLUSTER_TAG
from gpufleet.preflight.aws import account, brought, placement, quotas
from gpufleet.preflight.aws.clients import AwsClients
from gpufleet.preflight.findings import Finding

P_ON_DEMAND = quotas.P_ON_DEMAND.code
G_ON_DEMAND, G_SPOT = quotas.G_ON_DEMAND.code, quotas.G_SPOT.code


pytestmark = pytest.mark.usefixtures("moto")


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    # botocore's standard mode sleeps up to 2**attempt seconds between retries; the retries are what is tested.
    monkeypatch.setattr("botocore.retries.standard.ExponentialBackoff.delay_amount", lambda self, context: 0)


def only(findings: list[Finding], check: str) -> list[Finding]:
    return [f for f in findings if f.check == check]


# --- quotas -------------------------------------------------------------------------------------------------------

def quota_findings(monkeypatch: pytest.MonkeyPatch, values: dict[str, float], groups: list[dict[str, Any]],
                   names: dict[str, str] | None = None) -> list[Finding]:
    patch_quotas(monkeypatch, {code: ((names or NAMES)[code], value) for code, value in values.items()})
    cluster = train_cluster(node_groups=groups, budget={"max_hourly_usd": 5000})
    needed, unchecked = quotas.demands(cluster)
    with moto_account() as clients:
        return unchecked + [f for (q, spot), d in needed.items() for f in quotas.check_quota(clients, q, spot, d)]


def test_on_demand_quota_below_size_max_blocks_naming_the_group(monkeypatch: pytest.MonkeyPatch) -> None:
    findings = quota_findings(monkeypatch, {P_ON_DEMAND: 384}, [on_demand_group()])
    assert [(f.field, f.blocking) for f in findings] == [("node_groups[0].size.max", True)]
    assert "L-417A185B" in findings[0].says and "384 vCPUs" in findings[0].says and "3,072" in findings[0].says
    assert "--desired-value 3072" in findings[0].fix


def test_on_demand_quota_covering_size_max_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    assert quota_findings(monkeypatch, {P_ON_DEMAND: 3072}, [on_demand_group()]) == []


def test_groups_of_one_family_add_up(monkeypatch: pytest.MonkeyPatch) -> None:
    groups = [on_demand_group(), on_demand_group(name="more", size={"min": 0, "desired": 0, "max": 4})]
    findings = quota_findings(monkeypatch, {P_ON_DEMAND: 3072}, groups)  # each fits alone, not both (3,840)
    assert [(f.field, f.blocking) for f in findings] == [("node_groups[0].size.max", True)]
    assert "3,840" in findings[0].says and "more: 4 x p5.48xlarge" in findings[0].says


def test_spot_and_on_demand_quotas_are_separate(monkeypatch: pytest.MonkeyPatch) -> None:
    group = {"name": "l40s", "instance_types": ["g6e.48xlarge"], "size": {"min": 0, "desired": 2, "max": 8},
             "capacity": "mixed", "on_demand_base": 2, "rdma": "auto"}
    failing = quota_findings(monkeypatch, {G_ON_DEMAND: 384, G_SPOT: 0}, [group])
    assert [(G_SPOT in f.says, f.blocking) for f in failing] == [(True, True)]  # 2 x 192 on-demand fit exactly
    assert "1,152" in failing[0].says
    assert quota_findings(monkeypatch, {G_ON_DEMAND: 384, G_SPOT: 1152}, [group]) == []


def test_p5_spot_quota_is_found_by_its_documented_name(monkeypatch: pytest.MonkeyPatch) -> None:
    groups = [on_demand_group(capacity="spot", on_demand_base=1)]  # 1 on-demand, 15 spot p5.48xlarge
    names = {**NAMES, P5_SPOT_TEST_CODE: quotas.P5_SPOT.names[0]}
    failing = quota_findings(monkeypatch, {P_ON_DEMAND: 192, P5_SPOT_TEST_CODE: 1536}, groups, names)
    assert [(f.field, f.blocking) for f in failing] == [("node_groups[0].size.max", True)]
    assert P5_SPOT_TEST_CODE in failing[0].says and "2,880" in failing[0].says
    assert quota_findings(monkeypatch, {P_ON_DEMAND: 192, P5_SPOT_TEST_CODE: 2880}, groups, names) == []


def test_a_quota_the_account_lists_under_no_known_name_is_advisory(monkeypatch: pytest.MonkeyPatch) -> None:
    findings = quota_findings(monkeypatch, {P_ON_DEMAND: 3072}, [on_demand_group(capacity="spot")])
    assert [(f.field, f.blocking) for f in findings] == [("node_groups[0].size.max", False)]
    assert "not checked" in findings[0].says and "All P5 Spot Instance Requests" in findings[0].says


def test_a_code_answering_another_name_is_not_judged(monkeypatch: pytest.MonkeyPatch) -> None:
    findings = quota_findings(monkeypatch, {P_ON_DEMAND: 0}, [on_demand_group()], {P_ON_DEMAND: "Something else"})
    assert [f.blocking for f in findings] == [False] and "not checked" in findings[0].says


def test_a_quota_the_region_lacks_is_advisory(monkeypatch: pytest.MonkeyPatch) -> None:
    findings = quota_findings(monkeypatch, {}, [on_demand_group()])
    assert [f.blocking for f in findings] == [False] and "NoSuch" not in findings[0].fix


# --- zone offerings --------------------------------------------------------------------------------------------------

def offering_findings(zones: list[str], **group: Any) -> list[Finding]:
    base = {"name": "l40s", "instance_types": ["g6e.48xlarge"], "size": {"min": 0, "desired": 1, "max": 2},
            "capacity": "on-demand", "rdma": "auto"}
    cluster = train_cluster(node_groups=[{**base, **group}],
                            network={"cidr": "10.42.0.0/16", "zones": zones, "admin_cidrs": []},
                            storage={"kms_key": "create"})
    with moto_account() as clients:
        return placement.check_offerings(clients, cluster)


def test_rdma_group_zone_without_the_type_blocks_on_the_zone_field() -> None:
    # moto's us-east-1 offers g6e.48xlarge in 1a to 1d, not 1e (its recorded offerings).
    findings = offering_findings(["us-east-1e"])
    assert [(f.field, f.blocking) for f in findings] == [("network.zones[0]", True)]
    assert "us-east-1a" in findings[0].says


def test_regional_group_names_the_type_for_a_zone_without_it() -> None:
    findings = offering_findings(["us-east-1a", "us-east-1e"], rdma="off")
    assert [(f.field, f.blocking) for f in findings] == [("node_groups[0].instance_types[0]", True)]


def test_types_offered_in_every_zone_pass() -> None:
    assert offering_findings(["us-east-1a", "us-east-1b"], rdma="off") == []


# --- reservations (moto has no DescribeCapacityReservations: Stubber on the real EC2 client) -----------------------

RESERVATION_ID = "cr-0123456789abcdef0"
NOW = datetime(2026, 11, 20, 12, tzinfo=timezone.utc)


def reservation_findings(answer: dict[str, Any] | None, capacity: str = "reservation",
                         error: str | None = None) -> list[Finding]:
    size = {"min": 4, "desired": 4, "max": 4}
    cluster = train_cluster(node_groups=[on_demand_group(capacity=capacity, reservation_id=RESERVATION_ID,
                                                         size=size)])
    client, stub = stubbed("ec2")
    if error:
        stub.add_client_error("describe_capacity_reservations", error, http_status_code=400)
    else:
        held = {"CapacityReservationId": RESERVATION_ID, "InstanceType": "p5.48xlarge", "AvailabilityZone":
                "us-east-1a", "TotalInstanceCount": 4, "State": "active", "StartDate": NOW - timedelta(days=1),
                "EndDate": NOW + timedelta(days=1), "ReservationType": "default", **(answer or {})}
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": [held]},
                          {"CapacityReservationIds": [RESERVATION_ID]})
    with stub:
        return placement.check_reservation(AwsClients(REGION, lambda s, r: client), cluster,
                                           cluster.groups[0], now=NOW)


def test_a_matching_active_reservation_passes() -> None:
    assert reservation_findings({}) == []


def test_a_missing_reservation_blocks() -> None:
    findings = reservation_findings(None, error="InvalidCapacityReservationId.NotFound")
    assert [(f.field, f.blocking) for f in findings] == [("node_groups[0].reservation_id", True)]


def test_a_reservation_of_another_type_zone_and_count_blocks_on_each_field() -> None:
    findings = reservation_findings({"InstanceType": "p4d.24xlarge", "AvailabilityZone": "us-east-1b",
                                     "TotalInstanceCount": 2})
    assert {f.field for f in findings} == {"node_groups[0].instance_types[0]", "network.zones[0]",
                                           "node_groups[0].size.max"}
    assert all(f.blocking for f in findings)


def test_a_capacity_block_not_started_or_over_blocks() -> None:
    later = {"ReservationType": "capacity-block", "State": "scheduled", "StartDate": NOW + timedelta(hours=5)}
    findings = reservation_findings(later, capacity="capacity-block")
    assert [f.field for f in findings] == ["node_groups[0].reservation_id"] and "not" in findings[0].says
    over = {"ReservationType": "capacity-block", "State": "expired", "EndDate": NOW - timedelta(hours=1)}
    assert [f.blocking for f in reservation_findings(over, capacity="capacity-block")] == [True]


def test_a_reservation_inside_a_cluster_placement_group_blocks_naming_the_group() -> None:
    arn = "arn:aws:ec2:us-east-1:123456789012:placement-group/train-cpg"
    (finding,) = reservation_findings({"PlacementGroupArn": arn})
    assert (finding.field, finding.blocking) == ("node_groups[0].reservation_id", True)
    assert "placement group train-cpg" in finding.says and arn in finding.says


def test_a_capacity_block_named_as_a_reservation_blocks_on_capacity() -> None:
    findings = reservation_findings({"ReservationType": "capacity-block"})
    assert [f.field for f in findings] == ["node_groups[0].capacity"]


# --- brought network, keys, topic, identity ------------------------------------------------------------------------

def brought_network(clients: AwsClients, prefix: int = 20, zone: str = "us-east-1a") -> dict[str, Any]:
    ec2 = clients("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.0.0/{prefix}", AvailabilityZone=zone)["Subnet"]["SubnetId"]
    group = ec2.create_security_group(GroupName="nodes", Description="nodes", VpcId=vpc)["GroupId"]
    return {"vpc_id": vpc, "subnet_ids": [subnet], "security_group_id": group, "zones": ["us-east-1a"],
            "admin_cidrs": []}


def network_findings(clients: AwsClients, network: dict[str, Any]) -> list[Finding]:
    cluster = train_cluster(network=network)
    found = brought.check_vpc(clients, network["vpc_id"])
    found += brought.check_subnet(clients, cluster, 0, network["subnet_ids"][0])
    return found + brought.check_security_group(clients, network["security_group_id"], network["vpc_id"])


def test_a_brought_network_that_fits_passes() -> None:
    with moto_account() as clients:
        assert network_findings(clients, brought_network(clients)) == []


def test_a_subnet_too_small_for_size_max_blocks() -> None:
    with moto_account() as clients:
        network = brought_network(clients, prefix=28)  # 11 free addresses
        needed = train_cluster(network=network).addresses_at_max()["us-east-1a"]
        findings = network_findings(clients, network)
    assert needed > 11
    assert [(f.field, f.blocking) for f in findings] == [("network.subnet_ids[0]", True)]
    assert "11 free addresses" in findings[0].says and f"{needed:,}" in findings[0].says


def test_a_subnet_in_another_zone_blocks() -> None:
    with moto_account() as clients:
        findings = network_findings(clients, brought_network(clients, zone="us-east-1b"))
    assert [f.field for f in findings] == ["network.subnet_ids[0]"] and "us-east-1b" in findings[0].says


def test_missing_vpc_subnet_and_group_block_on_their_fields() -> None:
    with moto_account() as clients:
        network = {**brought_network(clients), "vpc_id": "vpc-0123456789abcdef0",
                   "subnet_ids": ["subnet-0123456789abcdef0"], "security_group_id": "sg-0123456789abcdef0"}
        findings = network_findings(clients, network)
    assert [f.field for f in findings] == ["network.vpc_id", "network.subnet_ids[0]", "network.security_group_id"]
    assert all(f.blocking for f in findings)


def test_a_security_group_of_another_vpc_blocks() -> None:
    with moto_account() as clients:
        network = brought_network(clients)
        other = clients("ec2").create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]
        elsewhere = clients("ec2").create_security_group(GroupName="x", Description="x", VpcId=other)["GroupId"]
        findings = brought.check_security_group(clients, elsewhere, network["vpc_id"])
    assert [f.field for f in findings] == ["network.security_group_id"] and other in findings[0].says


def test_a_brought_key_must_exist_and_be_enabled() -> None:
    with moto_account() as clients:
        kms = clients("kms")
        arn = kms.create_key()["KeyMetadata"]["Arn"]
        assert brought.check_key(clients, "storage.kms_key", arn) == []
        kms.disable_key(KeyId=arn.rsplit("/", 1)[-1])  # moto disables by key id only
        disabled = brought.check_key(clients, "storage.kms_key", arn)
        missing = brought.check_key(clients, "storage.kms_key",
                                    f"arn:aws:kms:{REGION}:123456789012:key/0b4e6c5a-1f0e-4d1c-9f5e-2a3b4c5d6e7f")
    assert [(f.field, f.blocking) for f in disabled + missing] == [("storage.kms_key", True)] * 2
    assert "Disabled" in disabled[0].says and "not found" in missing[0].says


def test_a_brought_alarm_topic_must_exist() -> None:
    with moto_account() as clients:
        topic = clients("sns").create_topic(Name="oncall")["TopicArn"]
        assert brought.check_topic(clients, topic) == []
        findings = brought.check_topic(clients, topic.replace("oncall", "nobody"))
    assert [(f.field, f.blocking) for f in findings] == [("monitoring.alarms.target", True)]


def test_a_brought_instance_profile_must_exist_and_hold_a_role() -> None:
    with moto_account() as clients:
        iam = clients("iam")
        empty = iam.create_instance_profile(InstanceProfileName="empty")["InstanceProfile"]["Arn"]
        full = iam.create_instance_profile(InstanceProfileName="nodes")["InstanceProfile"]["Arn"]
        iam.create_role(RoleName="node", AssumeRolePolicyDocument="{}")
        iam.add_role_to_instance_profile(InstanceProfileName="nodes", RoleName="node")
        assert brought.check_instance_profile(clients, full) == []
        findings = brought.check_instance_profile(clients, empty)
        findings += brought.check_instance_profile(clients, full.replace("nodes", "gone"))
    assert [(f.field, f.blocking) for f in findings] == [("identity.instance_profile_arn", True)] * 2
    assert "holds no role" in findings[0].says and "does not exist" in findings[1].says


def test_a_permissions_boundary_must_exist() -> None:
    with moto_account() as clients:
        policy = clients("iam").create_policy(PolicyName="boundary", PolicyDocument='{"Version": "2012-10-17", '
                                              '"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}')
        arn = policy["Policy"]["Arn"]
        assert brought.check_boundary(clients, arn) == []
        findings = brought.check_boundary(clients, arn.replace("boundary", "gone"))
    assert [(f.field, f.blocking) for f in findings] == [("identity.permissions_boundary", True)]


# --- account setup and the pinned image ------------------------------------------------------------------------------

def test_existing_service_linked_roles_must_be_there_when_the_stack_says_exists() -> None:
    identity = {"service_linked_roles": "exists"}
    with moto_account() as clients:
        cluster = train_cluster(identity=identity)
        findings = account.check_service_linked_roles(clients, cluster)
        clients("iam").create_service_linked_role(AWSServiceName="autoscaling.amazonaws.com")
        assert account.check_service_linked_roles(clients, cluster) == []
        assert account.check_service_linked_roles(clients, train_cluster()) == []  # per-cluster: created by the stack
    assert [(f.field, f.blocking) for f in findings] == [("identity.service_linked_roles", True)]
    assert "AWSServiceRoleForAutoScaling" in findings[0].says


@pytest.mark.parametrize(("status", "advice"), [("Active", False), ("Inactive", True), (None, True)])
def test_the_budget_tag_must_be_an_active_cost_allocation_tag(status: str | None, advice: bool) -> None:
    # moto has no ListCostAllocationTags: the Stubber answers on the real Cost Explorer client.
    clients = AwsClients(REGION, lambda s, r: cost_tag_client(status))
    findings = account.check_cost_tag(clients, train_cluster())
    assert [(f.field, f.blocking) for f in findings] == ([("budget.alert_at_percent", False)] if advice else [])


def test_the_budget_tag_is_the_one_the_budget_filters_on() -> None:
    assert account.CLUSTER_TAG == CLUSTER_TAG


def test_the_pinned_image_must_be_baked_and_visible() -> None:
    with moto_account() as clients:
        ami = owned_ami(clients)
        assert account.check_image(clients, train_cluster(lock=baked_lock(ami))) == []
        gone = account.check_image(clients, train_cluster(lock=baked_lock("ami-0123456789abcdef0")))
        unbaked = account.check_image(clients, train_cluster())  # the shipped lock: not baked yet
    assert [(f.field, f.blocking) for f in gone + unbaked] == [("image", True)] * 2
    assert "ami-0123456789abcdef0" in gone[0].says and "unbaked" in unbaked[0].says


# --- the Slurm head node's type in its zone ---------------------------------------------------------------------------

def head_node_findings(head: dict[str, Any]) -> list[Finding]:
    group = {"name": "l40s", "instance_types": ["g6e.48xlarge"], "size": {"min": 0, "desired": 1, "max": 2},
             "capacity": "on-demand", "rdma": "off"}
    cluster = train_cluster(node_groups=[group], scheduler={"kind": "slurm", "head_node": head},
                            network={"cidr": "10.42.0.0/16", "zones": ["us-east-1a", "us-east-1e"], "admin_cidrs": []},
                            storage={"kms_key": "create"})
    with moto_account() as clients:
        return [f for f in placement.check_offerings(clients, cluster) if f.field.startswith("scheduler.")]


def test_a_head_node_type_its_zone_lacks_blocks() -> None:
    # moto's us-east-1 offers m7i.xlarge in 1a to 1d and 1f, not 1e (its recorded offerings).
    (finding,) = head_node_findings({"instance_type": "m7i.xlarge", "zone": "us-east-1e"})
    assert (finding.check, finding.field, finding.blocking) == ("aws-zone-offering",
                                                                "scheduler.head_node.instance_type", True)
    assert finding.says == ("m7i.xlarge, the Slurm head node's type, is not offered in us-east-1e (offered in: "
                            "us-east-1a, us-east-1b, us-east-1c, us-east-1d, us-east-1f)")
    assert finding.fix == ("choose a head node type offered in us-east-1e, or set scheduler.head_node.zone to one of "
                           "network.zones that offers m7i.xlarge")


def test_a_head_node_in_the_first_zone_by_default_passes() -> None:
    assert head_node_findings({"instance_type": "m7i.xlarge"}) == []
