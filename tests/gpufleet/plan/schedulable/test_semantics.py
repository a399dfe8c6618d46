"""The scheduler's admission semantics on crafted pods and nodes: taints and tolerations (operators, empty key,
effects), node selection (nodeSelector, every affinity operator, terms ORed and expressions ANDed) and requests
(extended resources, init containers, sidecars, limits-only, overhead)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from gpufleet.plan.schedulable.check import NO_GROUP, unschedulable
from gpufleet.plan.schedulable.pods import PodSource
from gpufleet.plan.schedulable.quantities import QuantityError, quantity
from gpufleet.plan.schedulable.semantics import (
    NodeTemplate,
    Taint,
    admission_gaps,
    pod_requests,
    requirement_holds,
    resource_gaps,
    selection_gaps,
    tolerates,
    untolerated,
)

GPU = Taint("nvidia.com/gpu", "present", "NoSchedule")


@pytest.mark.parametrize(("toleration", "taint", "expected"), [
    ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}, GPU, True),
    ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "absent", "effect": "NoSchedule"}, GPU, False),
    ({"key": "nvidia.com/gpu", "value": "present"}, GPU, True),  # empty operator means Equal; empty effect: all
    ({"key": "nvidia.com/gpu", "value": ""}, GPU, False),
    ({"key": "nvidia.com/gpu", "operator": "Exists"}, GPU, True),
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, GPU, False),
    ({"key": "other", "operator": "Exists"}, GPU, False),
    ({"operator": "Exists"}, GPU, True),  # empty key with Exists tolerates every taint
    ({"operator": "Exists", "effect": "NoExecute"}, GPU, False),
    ({"key": "CriticalAddonsOnly", "operator": "Exists"}, Taint("CriticalAddonsOnly", "true", "NoSchedule"), True),
    ({"key": "k", "operator": "Exists"}, Taint("k", "", "NoExecute"), True),
    ({"key": "n", "operator": "Gt", "value": "3"}, Taint("n", "5", "NoSchedule"), True),
    ({"key": "n", "operator": "Gt", "value": "5"}, Taint("n", "5", "NoSchedule"), False),
    ({"key": "n", "operator": "Lt", "value": "9"}, Taint("n", "5", "NoSchedule"), True),
    ({"key": "n", "operator": "Lt", "value": "9"}, Taint("n", "five", "NoSchedule"), False),
    ({"key": "nvidia.com/gpu", "operator": "Bogus"}, GPU, False),
])
def test_a_toleration_tolerates_a_taint_as_core_v1_defines(toleration, taint, expected):
    assert tolerates(toleration, taint) is expected


@pytest.mark.parametrize(("effect", "blocks"), [("NoSchedule", True), ("NoExecute", True),
                                                ("PreferNoSchedule", False)])
def test_only_noschedule_and_noexecute_keep_a_pod_off(effect, blocks):
    taint = Taint("dedicated", "ml", effect)
    assert untolerated([taint], []) == ([taint] if blocks else [])


def test_every_blocking_taint_must_be_tolerated_not_just_one():
    check = Taint("gpufleet.io/node-check", "pending", "NoSchedule")
    assert untolerated([GPU, check], [{"key": "nvidia.com/gpu", "operator": "Exists"}]) == [check]


LABELS = {"node.kubernetes.io/instance-type": "p5.48xlarge", "gpufleet.io/group": "h100", "gpus": "8"}


@pytest.mark.parametrize(("expression", "expected"), [
    ({"key": "gpufleet.io/group", "operator": "In", "values": ["h100", "a100"]}, True),
    ({"key": "gpufleet.io/group", "operator": "In", "values": ["a100"]}, False),
    ({"key": "missing", "operator": "In", "values": [""]}, False),
    ({"key": "gpufleet.io/group", "operator": "NotIn", "values": ["a100"]}, True),
    ({"key": "gpufleet.io/group", "operator": "NotIn", "values": ["h100"]}, False),
    ({"key": "missing", "operator": "NotIn", "values": ["x"]}, True),  # NotIn holds where the label is absent
    ({"key": "gpus", "operator": "Exists"}, True),
    ({"key": "missing", "operator": "Exists"}, False),
    ({"key": "missing", "operator": "DoesNotExist"}, True),
    ({"key": "gpus", "operator": "DoesNotExist"}, False),
    ({"key": "gpus", "operator": "Gt", "values": ["4"]}, True),
    ({"key": "gpus", "operator": "Gt", "values": ["8"]}, False),
    ({"key": "gpus", "operator": "Lt", "values": ["9"]}, True),
    ({"key": "gpus", "operator": "Lt", "values": ["8"]}, False),
    ({"key": "gpufleet.io/group", "operator": "Gt", "values": ["1"]}, False),  # not an integer label
    ({"key": "missing", "operator": "Lt", "values": ["1"]}, False),
])
def test_each_node_selector_operator(expression, expected):
    assert requirement_holds(expression, LABELS) is expected


def _affinity(*terms):
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": list(terms)}}}}


def _term(*expressions):
    return {"matchExpressions": list(expressions)}


IN_H100 = {"key": "gpufleet.io/group", "operator": "In", "values": ["h100"]}
IN_A100 = {"key": "gpufleet.io/group", "operator": "In", "values": ["a100"]}
HAS_GPUS = {"key": "gpus", "operator": "Exists"}


@pytest.mark.parametrize(("spec", "chosen"), [
    (_affinity(_term(IN_A100), _term(IN_H100)), True),  # terms are ORed
    (_affinity(_term(IN_H100, HAS_GPUS)), True),  # a term's expressions are ANDed
    (_affinity(_term(IN_H100, IN_A100)), False),
    (_affinity(_term()), False),  # an empty term matches nothing
    (_affinity(), False),
    ({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": _term(IN_A100)}]}}}, True),  # preferences never filter
    ({"nodeSelector": {"gpufleet.io/group": "h100", "gpus": "8"}}, True),
    ({"nodeSelector": {"gpufleet.io/group": "h100", "gpus": "4"}}, False),
    ({"nodeSelector": {"gpufleet.io/group": "h100"}, **_affinity(_term(IN_A100))}, False),  # both must hold
])
def test_node_selection(spec, chosen):
    assert (not selection_gaps(spec, LABELS)) is chosen


def test_a_selection_gap_names_the_label_the_node_has():
    gaps = selection_gaps({"nodeSelector": {"node.kubernetes.io/instance-type": "g6e.48xlarge"}}, LABELS)
    assert gaps == ["nodeSelector node.kubernetes.io/instance-type=g6e.48xlarge (node has 'p5.48xlarge')"]


def _container(name, requests=None, limits=None, **extra):
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v is not None}
    return {"name": name, "resources": resources, **extra}


def test_requests_sum_containers_and_take_the_larger_init_container():
    spec = {"containers": [_container("a", {"cpu": "500m", "memory": "1Gi"}), _container("b", {"cpu": "1"})],
            "initContainers": [_container("init", {"cpu": "2", "memory": "512Mi"})]}
    assert pod_requests(spec) == {"cpu": Fraction(2), "memory": Fraction(2**30)}


def test_a_sidecar_init_container_adds_to_the_containers_and_to_later_init_containers():
    spec = {"containers": [_container("main", {"cpu": "1"})],
            "initContainers": [_container("proxy", {"cpu": "500m"}, restartPolicy="Always"),
                               _container("setup", {"cpu": "1800m"})]}
    # the sidecar runs beside setup (0.5 + 1.8 = 2.3) and beside main (1 + 0.5 = 1.5): the pod needs 2.3
    assert pod_requests(spec) == {"cpu": Fraction(23, 10)}


def test_limits_stand_for_requests_where_none_are_given_and_overhead_is_added():
    spec = {"containers": [_container("w", limits={"nvidia.com/gpu": 8, "memory": "2Gi"})],
            "overhead": {"memory": "1Gi"}}
    assert pod_requests(spec) == {"nvidia.com/gpu": Fraction(8), "memory": Fraction(3 * 2**30)}


def test_pod_level_requests_take_the_place_of_the_containers_for_cpu_memory_and_hugepages():
    spec = {"containers": [_container("c", {"cpu": "1", "nvidia.com/gpu": 1})],
            "resources": {"requests": {"cpu": "3"}, "limits": {"memory": "1Gi"}}}
    assert pod_requests(spec) == {"cpu": Fraction(3), "memory": Fraction(2**30), "nvidia.com/gpu": Fraction(1)}


@pytest.mark.parametrize(("requests", "allocatable", "gaps"), [
    ({"nvidia.com/gpu": Fraction(8)}, {"nvidia.com/gpu": Fraction(8)}, []),
    ({"nvidia.com/gpu": Fraction(8)}, {"nvidia.com/gpu": Fraction(4)},
     ["nvidia.com/gpu: requests 8, allocatable 4"]),
    ({"vpc.amazonaws.com/efa": Fraction(32)}, {}, ["vpc.amazonaws.com/efa: requests 32, not advertised"]),
    ({"hugepages-2Mi": Fraction(5120 * 2**20)}, {}, ["hugepages-2Mi: requests 5120Mi, not advertised"]),
    ({"aliyun/erdma": Fraction(1)}, {"aliyun/erdma": None}, []),  # advertised, amount unknown: not judged
    ({"cpu": Fraction(4), "memory": Fraction(2**30)}, {}, []),  # the type's size unknown: not judged
    ({"memory": Fraction(33554432000)}, {"memory": Fraction(30 * 2**30)},
     ["memory: requests 32000Mi, allocatable 30720Mi"]),
])
def test_requests_against_allocatable(requests, allocatable, gaps):
    assert resource_gaps(requests, allocatable) == gaps


@pytest.mark.parametrize(("text", "amount"), [("100m", Fraction(1, 10)), ("8", Fraction(8)), ("1.5", Fraction(3, 2)),
                                              ("5120Mi", Fraction(5120 * 2**20)), ("1G", Fraction(10**9)),
                                              ("1e3", Fraction(1000)), (8, Fraction(8))])
def test_quantities(text, amount):
    assert quantity(text) == amount


def test_a_malformed_quantity_names_itself():
    with pytest.raises(QuantityError, match="'8 GPUs' is no Kubernetes quantity"):
        quantity("8 GPUs")


SYSTEM = NodeTemplate("system", {"kubernetes.io/os": "linux"}, (), {"cpu": Fraction(4)})
H100 = NodeTemplate("h100", {"kubernetes.io/os": "linux", "gpufleet.io/group": "h100"}, (GPU,),
                    {"cpu": Fraction(192), "nvidia.com/gpu": Fraction(8)})


def _pod(spec, daemon=False):
    return PodSource("Deployment ns/p", {"containers": [], **spec}, daemon, "urn:p")


def test_a_pod_some_group_admits_is_not_reported():
    assert unschedulable([_pod({})], [SYSTEM, H100]) == []


def test_a_pod_no_group_admits_names_what_each_group_lacks():
    worker = _pod({"containers": [_container("w", limits={"nvidia.com/gpu": 8})]})
    (found,) = unschedulable([worker], [SYSTEM, H100])
    assert found.gaps == {"system": ["nvidia.com/gpu: requests 8, not advertised"],
                          "h100": ["taint nvidia.com/gpu=present:NoSchedule not tolerated"]}
    assert found.message.startswith("no node admits Deployment ns/p: system: nvidia.com/gpu")


def test_a_cluster_without_groups_admits_nothing():
    (found,) = unschedulable([_pod({})], [])
    assert found.gaps == {NO_GROUP: [NO_GROUP]}


def test_a_daemonset_must_tolerate_every_group_it_selects():
    agent = _pod({"tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}]}, daemon=True)
    (found,) = unschedulable([agent], [SYSTEM, H100])
    assert found.gaps == {"h100": ["taint nvidia.com/gpu=present:NoSchedule not tolerated"]}
    assert "misses nodes it is meant for" in found.message


def test_a_daemonset_is_not_meant_for_groups_its_selection_leaves_out():
    plugin = _pod({"nodeSelector": {"gpufleet.io/group": "h100"}, "tolerations": [{"operator": "Exists"}]},
                  daemon=True)
    assert unschedulable([plugin], [SYSTEM, H100]) == []


def test_a_daemonset_that_selects_no_group_is_reported():
    plugin = _pod({"nodeSelector": {"gpufleet.io/group": "a100"}}, daemon=True)
    (found,) = unschedulable([plugin], [SYSTEM, H100])
    assert set(found.gaps) == {"system", "h100"}


def test_variants_of_a_group_that_lack_the_same_fold_into_the_group():
    spot = NodeTemplate("h100", {**H100.labels, "lifecycle": "spot"}, (GPU,), {}, "spot")
    demand = NodeTemplate("h100", {**H100.labels, "lifecycle": "on-demand"}, (GPU,), {}, "on-demand")
    (found,) = unschedulable([_pod({})], [spot, demand])
    assert found.gaps == {"h100": ["taint nvidia.com/gpu=present:NoSchedule not tolerated"]}
    (split,) = unschedulable([_pod({"nodeSelector": {"lifecycle": "spot"}})], [spot, demand])
    assert set(split.gaps) == {"h100 (spot)", "h100 (on-demand)"}


def test_admission_gaps_list_taints_then_selection_then_resources():
    spec = {"nodeSelector": {"gpufleet.io/group": "a100"}, "containers": [_container("c", {"nvidia.com/gpu": 16})]}
    assert admission_gaps(spec, H100) == [
        "taint nvidia.com/gpu=present:NoSchedule not tolerated",
        "nodeSelector gpufleet.io/group=a100 (node has 'h100')",
        "nvidia.com/gpu: requests 16, allocatable 8",
    ]
