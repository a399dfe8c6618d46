"""A public ACK API server limited to named ranges: what the program registers for `scheduler.endpoint: public` (the
CLB ACL with ACK's control plane, the VPC and public_cidrs, bound as a whitelist to the cluster's API server
listener once every entry is in, before the in-cluster layer), the pack passing it and failing it without the
binding, and the binding's dynamic provider run through the official SLB SDK client against recorded answers."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import dill
import pytest
import responses
from alicloud_replay import Replay, static_key
from conftest import of_type, one, read_cluster, without_job_operators, write_stack
from pulumi.dynamic import ConfigureRequest
from pulumi.dynamic.config import Config
from pulumi.dynamic.dynamic import serialize_provider
from sdk_inputs import unknown_inputs

from components.clouds.alicloud.api_server_acl import BINDING_TYPE, ApiServerAclProvider, BindingRefused
from gpufleet.clouds.alicloud.mock_answers import new_resource
from gpufleet.plan.planner import PlanResult, plan_stack
from gpufleet.plan.policy_runner import run_policies
from policies.alicloud import ack

CLUSTER = "alicloud:cs/managedKubernetes:ManagedKubernetes"
ACL = "alicloud:slb/acl:Acl"
ENTRY = "alicloud:slb/aclEntryAttachment:AclEntryAttachment"
K8S_PROVIDER = "pulumi:providers:kubernetes"
ADMINS = ["198.51.100.0/24", "203.0.113.8/29"]
REGION = "cn-wulanchabu"
PROPS: dict[str, Any] = {"load_balancer_id": "lb-0jl5nqah1gbx2p5iiyxyz", "listener_port": 6443,
                         "acl_id": "acl-bp1l0kk4gxce43i3abcde", "acl_type": "white", "region": REGION,
                         "__provider": "serialized provider (the engine adds it; the binding never sends it)"}


def public_ack(**scheduler: Any) -> dict[str, Any]:
    cluster = copy.deepcopy(read_cluster("alicloud-train-ack"))
    cluster["scheduler"].update({"endpoint": "public", "public_cidrs": ADMINS, **scheduler})
    return without_job_operators(cluster)  # the API server's reach, not what runs inside


@pytest.fixture(scope="module")
def public(tmp_path_factory: pytest.TempPathFactory) -> PlanResult:
    return plan_stack(write_stack(tmp_path_factory.mktemp("ack-public"), "ack", public_ack()))


def test_a_public_endpoint_is_asked_of_ack_at_create_and_the_plan_warns_of_the_minutes_before_the_whitelist(
    public: PlanResult,
) -> None:
    assert one(public, CLUSTER).inputs["slbInternetEnabled"] is True
    (warning,) = [w for w in public.summary["warnings"] if w.startswith("scheduler.endpoint:")]
    assert "answers every address from the cluster's creation until the whitelist" in warning


def test_the_whitelist_holds_acks_control_plane_the_vpc_and_the_public_ranges(public: PlanResult) -> None:
    acl = one(public, ACL)
    assert acl.inputs["ipVersion"] == "ipv4"
    entries = of_type(public, ENTRY)
    assert [entry.inputs["entry"] for entry in entries] == [
        "100.104.0.0/16", read_cluster("alicloud-train-ack")["network"]["cidr"], *ADMINS]
    assert all(entry.property_dependencies["aclId"] == (acl.urn,) for entry in entries)


def test_the_list_and_its_entries_take_only_inputs_the_sdk_declares(public: PlanResult) -> None:
    assert unknown_inputs(public) == []


def test_the_list_is_bound_as_a_whitelist_to_the_clusters_api_server_listener_after_every_entry(
    public: PlanResult,
) -> None:
    (binding,) = of_type(public, BINDING_TYPE)
    cluster, acl = one(public, CLUSTER), one(public, ACL)
    assert {key: binding.inputs[key] for key in ("listener_port", "acl_type", "region")} == {
        "listener_port": 6443, "acl_type": "white", "region": REGION}
    assert binding.property_dependencies["load_balancer_id"] == (cluster.urn,)
    assert binding.property_dependencies["acl_id"] == (acl.urn,)
    assert {entry.urn for entry in of_type(public, ENTRY)} <= set(binding.depends_on)


def test_the_in_cluster_layer_waits_for_the_whitelist(public: PlanResult) -> None:
    (binding,) = of_type(public, BINDING_TYPE)
    assert binding.urn in one(public, K8S_PROVIDER).depends_on


def test_the_pack_passes_the_bound_whitelist_and_fails_the_cluster_without_it(public: PlanResult) -> None:
    rule = [rule.policy for rule in ack.RULES if rule.policy.name == "alicloud-ack-api-not-open"]
    assert run_policies(public.resources, {}, rule).violations == []
    unbound = [resource for resource in public.resources if resource.type != BINDING_TYPE]
    (violation,) = run_policies(unbound, {}, rule).violations
    assert violation.urn == one(public, CLUSTER).urn and "open to every address" in violation.message


def test_a_private_cluster_has_no_list(tmp_path: Path) -> None:
    cluster = copy.deepcopy(read_cluster("alicloud-train-ack"))
    cluster["scheduler"] = {**cluster["scheduler"], "endpoint": "private", "public_cidrs": []}
    plan = plan_stack(write_stack(tmp_path, "ack", without_job_operators(cluster)))
    assert one(plan, CLUSTER).inputs["slbInternetEnabled"] is False
    assert of_type(plan, ACL) == [] and of_type(plan, BINDING_TYPE) == []
    # As shipped (the profile ACK installs, a supported version) the plan warns of nothing: no warnings key at all.
    assert not [w for w in plan.summary.get("warnings", []) if w.startswith("scheduler.endpoint:")]


def provider() -> ApiServerAclProvider:
    return ApiServerAclProvider(credential=static_key())


@pytest.fixture
def replay():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield Replay(mock)


def test_create_turns_the_whitelist_on_for_the_listener(replay: Replay) -> None:
    replay.answer("SetLoadBalancerTCPListenerAttribute", "SetLoadBalancerTCPListenerAttribute.ok")
    result = provider().create(dict(PROPS))
    ((action, sent),) = replay.calls
    assert action == "SetLoadBalancerTCPListenerAttribute"
    assert {key: sent[key] for key in ("RegionId", "LoadBalancerId", "ListenerPort", "AclStatus", "AclType",
                                       "AclId")} == {
        "RegionId": REGION, "LoadBalancerId": PROPS["load_balancer_id"], "ListenerPort": "6443",
        "AclStatus": "on", "AclType": "white", "AclId": PROPS["acl_id"]}
    assert result.id == f"{PROPS['load_balancer_id']}:6443" and result.outs == PROPS


def test_the_providers_endpoints_block_names_the_slb_endpoint_it_calls() -> None:
    bindings = provider()
    bindings.configure(ConfigureRequest(Config({"alicloud:endpoints": json.dumps(
        [{"slb": f"slb-vpc.{REGION}.aliyuncs.com"}])}, "gpufleet")))
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        Replay(mock).answer("SetLoadBalancerTCPListenerAttribute", "SetLoadBalancerTCPListenerAttribute.ok")
        bindings.create(dict(PROPS))
        (call,) = mock.calls
    assert call.request.url.startswith(f"https://slb-vpc.{REGION}.aliyuncs.com/")


def test_delete_turns_access_control_off_and_names_no_list(replay: Replay) -> None:
    replay.answer("SetLoadBalancerTCPListenerAttribute", "SetLoadBalancerTCPListenerAttribute.ok")
    provider().delete(f"{PROPS['load_balancer_id']}:6443", dict(PROPS))
    ((_, sent),) = replay.calls
    assert sent["AclStatus"] == "off" and "AclId" not in sent and "AclType" not in sent


def test_a_refusal_stops_the_deploy_with_its_code(replay: Replay) -> None:
    replay.answer("SetLoadBalancerTCPListenerAttribute", "SetLoadBalancerTCPListenerAttribute.forbidden")
    with pytest.raises(BindingRefused, match=r"on\) on lb-0jl5nqah1gbx2p5iiyxyz:6443 refused: Forbidden\.RAM"):
        provider().create(dict(PROPS))


def test_deleting_a_binding_whose_load_balancer_is_gone_succeeds_and_creating_on_one_fails(replay: Replay) -> None:
    replay.answer("SetLoadBalancerTCPListenerAttribute", "SetLoadBalancerTCPListenerAttribute.gone")
    provider().delete(f"{PROPS['load_balancer_id']}:6443", dict(PROPS))  # the cluster took it: nothing to open
    with pytest.raises(BindingRefused, match="InvalidLoadBalancerId.NotFound"):
        provider().create(dict(PROPS))


def test_another_list_updates_in_place_and_another_listener_replaces() -> None:
    bindings = ApiServerAclProvider()
    assert bindings.diff("id", PROPS, dict(PROPS)).changes is False
    relisted = bindings.diff("id", PROPS, {**PROPS, "acl_id": "acl-other"})
    assert relisted.changes and relisted.replaces == []
    moved = bindings.diff("id", PROPS, {**PROPS, "load_balancer_id": "lb-other"})
    assert moved.replaces == ["load_balancer_id"]


def test_the_provider_survives_the_engines_serialization() -> None:
    loaded = dill.loads(base64.b64decode(serialize_provider(ApiServerAclProvider())))
    assert isinstance(loaded, ApiServerAclProvider) and loaded.credential is None


def test_the_offline_answer_is_what_the_providers_create_returns(replay: Replay) -> None:
    replay.answer("SetLoadBalancerTCPListenerAttribute", "SetLoadBalancerTCPListenerAttribute.ok")
    physical, outputs = new_resource(BINDING_TYPE, "train-ack-api-acl-binding", dict(PROPS), REGION)
    assert physical == provider().create(dict(PROPS)).id and outputs == {}
