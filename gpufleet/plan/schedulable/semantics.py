"""What the kube-scheduler's filters ask of one node for one pod, as Kubernetes defines them (kubernetes/kubernetes,
files read at the commits named):

- taints and tolerations: staging/src/k8s.io/api/core/v1/toleration.go@19c6083b ToleratesTaint (empty effect
  matches every effect; empty key matches every key, with Exists every taint; empty operator means Equal; Lt and Gt
  compare integers), filtered as pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go Filter does
  (FindMatchingUntoleratedTaint over NoSchedule and NoExecute taints only: PreferNoSchedule only scores);
- nodeSelector and required node affinity: staging/src/k8s.io/component-helpers/scheduling/corev1/nodeaffinity/
  nodeaffinity.go@1ca8f84e (RequiredNodeAffinity.Match: every nodeSelector pair, then the terms; terms are ORed,
  "nil or empty term selects no objects" (NewLazyErrorNodeSelector), a term's matchExpressions ANDed as one label
  selector), with apimachinery labels/selector.go Requirement.Matches (NotIn and DoesNotExist hold where the label
  is absent; Gt and Lt take one integer value and an integer label);
- requests: staging/src/k8s.io/component-helpers/resource/helpers.go@0085214e PodRequests and
  aggregateContainerResourcesByFn (regular containers summed; each init container, plus the restartable (sidecar)
  init containers before it, against that sum at its max; sidecars added to the sum; pod-level requests of cpu,
  memory and hugepages in place of the containers'; the pod's overhead on top), with requests defaulted to limits
  where only limits are given (pkg/apis/core/v1/defaults.go SetDefaults_Pod), judged as the NodeResourcesFit plugin
  does (pkg/scheduler/framework/plugins/noderesources/fit.go fitsRequest): each requested resource against the
  node's allocatable.

A node's allocatable may leave out cpu, memory, ephemeral-storage or pods where the plan cannot know the type's size:
those are not judged. Any other resource a node leaves out it does not advertise (0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from .quantities import QuantityError, quantity

BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
NODE_SIZED = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})
"""Resources every node has: left out of a template's allocatable means the plan does not know the amount."""


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


@dataclass(frozen=True)
class NodeTemplate:
    """One kind of node a group makes: what the scheduler sees of it."""

    group: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...] = ()
    allocatable: Mapping[str, Fraction | None] = field(default_factory=dict)
    """Resource -> amount; None where the resource is advertised but its amount is not known offline."""
    variant: str = ""
    """What tells this template from the group's others (e.g. spot), empty where the group makes one kind."""

    @property
    def title(self) -> str:
        return f"{self.group} ({self.variant})" if self.variant else self.group


def tolerates(toleration: Mapping[str, Any], taint: Taint) -> bool:
    """Whether one toleration tolerates one taint (core/v1 toleration.go ToleratesTaint)."""
    effect, key = toleration.get("effect") or "", toleration.get("key") or ""
    operator = toleration.get("operator") or ""
    if effect and effect != taint.effect:
        return False
    if key and key != taint.key:
        return False
    if operator in ("", "Equal"):
        return str(toleration.get("value") or "") == taint.value
    if operator == "Exists":
        return True
    if operator in ("Lt", "Gt"):
        try:
            wanted, actual = int(str(toleration.get("value"))), int(taint.value)
        except ValueError:
            return False
        return actual < wanted if operator == "Lt" else actual > wanted
    return False


def untolerated(taints: Sequence[Taint], tolerations: Sequence[Mapping[str, Any]]) -> list[Taint]:
    """The node's NoSchedule and NoExecute taints no toleration of the pod tolerates."""
    return [taint for taint in taints if taint.effect in BLOCKING_EFFECTS
            and not any(tolerates(toleration, taint) for toleration in tolerations)]


def _integer(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def requirement_holds(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """One matchExpression against a node's labels (apimachinery labels/selector.go Requirement.Matches)."""
    key, operator, values = expression["key"], expression["operator"], [str(v) for v in expression.get("values") or []]
    present, value = key in labels, labels.get(key, "")
    if operator == "In":
        return present and value in values
    if operator == "NotIn":
        return not present or value not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt"):
        label, bound = _integer(value), _integer(values[0]) if len(values) == 1 else None
        if not present or label is None or bound is None:
            return False
        return label > bound if operator == "Gt" else label < bound
    raise ValueError(f"matchExpressions: unknown operator {operator!r} (key {key})")


def _term_holds(term: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    expressions = term.get("matchExpressions") or []
    # matchFields selects on metadata.name, which no template node has yet: such a term is never judged to hold.
    if not expressions or term.get("matchFields"):
        return False
    return all(requirement_holds(expression, labels) for expression in expressions)


def _describe(expression: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    key = expression["key"]
    values = expression.get("values")
    has = f"node has {labels[key]!r}" if key in labels else "node has no such label"
    return f"{key} {expression['operator']}{' ' + str(list(values)) if values else ''} ({has})"


def selection_gaps(spec: Mapping[str, Any], labels: Mapping[str, str]) -> list[str]:
    """What of the pod's nodeSelector and required node affinity the node's labels fail, empty when it is chosen."""
    gaps = [f"nodeSelector {key}={value} (node has {labels[key]!r})" if key in labels
            else f"nodeSelector {key}={value} (node has no such label)"
            for key, value in (spec.get("nodeSelector") or {}).items() if labels.get(key) != str(value)]
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        terms = required.get("nodeSelectorTerms") or []
        if not any(_term_holds(term, labels) for term in terms):
            failed = ["; ".join(_describe(e, labels) for e in term.get("matchExpressions") or []
                                if not requirement_holds(e, labels)) or "an empty term" for term in terms]
            gaps.append("required node affinity: no term holds (" + " | ".join(failed or ["no terms"]) + ")")
    return gaps


def _requests(owner: Mapping[str, Any], what: str) -> dict[str, Fraction]:
    """A container's (or a pod's own) `resources` as requests: limits stand for requests that are not given."""
    resources = owner.get("resources") or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    try:
        return {name: quantity(amount) for name, amount in merged.items()}
    except QuantityError as error:
        raise ValueError(f"{what}: {error}") from None


def _pod_level(name: str) -> bool:
    # helpers.go IsSupportedPodLevelResource: cpu, memory and huge pages.
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def _add(total: dict[str, Fraction], more: Mapping[str, Fraction]) -> None:
    for name, amount in more.items():
        total[name] = total.get(name, Fraction(0)) + amount


def _at_least(total: dict[str, Fraction], other: Mapping[str, Fraction]) -> None:
    for name, amount in other.items():
        total[name] = max(total.get(name, Fraction(0)), amount)


def pod_requests(spec: Mapping[str, Any]) -> dict[str, Fraction]:
    """What the pod asks of a node (component-helpers resource/helpers.go PodRequests)."""
    requests: dict[str, Fraction] = {}
    for container in spec.get("containers") or []:
        _add(requests, _requests(container, f"container {container.get('name')}"))
    init_peak: dict[str, Fraction] = {}
    sidecars: dict[str, Fraction] = {}
    for container in spec.get("initContainers") or []:
        own = _requests(container, f"init container {container.get('name')}")
        if container.get("restartPolicy") == "Always":  # a sidecar keeps running beside everything after it
            _add(requests, own)
            _add(sidecars, own)
            during = dict(sidecars)
        else:
            during = dict(own)
            _add(during, sidecars)
        _at_least(init_peak, during)
    _at_least(requests, init_peak)
    requests.update({name: amount for name, amount in _requests(spec, "pod resources").items() if _pod_level(name)})
    _add(requests, {name: quantity(amount) for name, amount in (spec.get("overhead") or {}).items()})
    return {name: amount for name, amount in requests.items() if amount > 0}


BYTES = ("memory", "ephemeral-storage", "hugepages-")


def _show(name: str, amount: Fraction) -> str:
    if name.startswith(BYTES):
        return f"{float(amount / 2**20):g}Mi"
    return str(int(amount)) if amount.denominator == 1 else f"{float(amount):g}"


def resource_gaps(requests: Mapping[str, Fraction], allocatable: Mapping[str, Fraction | None]) -> list[str]:
    """Each requested resource the node's allocatable cannot hold (noderesources/fit.go fitsRequest)."""
    gaps = []
    for name, amount in sorted(requests.items()):
        if name in allocatable:
            has = allocatable[name]
            if has is not None and amount > has:
                gaps.append(f"{name}: requests {_show(name, amount)}, allocatable {_show(name, has)}")
        elif name not in NODE_SIZED:
            gaps.append(f"{name}: requests {_show(name, amount)}, not advertised")
    return gaps


def admission_gaps(spec: Mapping[str, Any], node: NodeTemplate) -> list[str]:
    """Why the node does not admit the pod (empty: it does): untolerated taints, selection, requests."""
    gaps = [f"taint {taint} not tolerated" for taint in untolerated(node.taints, spec.get("tolerations") or [])]
    return [*gaps, *selection_gaps(spec, node.labels), *resource_gaps(pod_requests(spec), node.allocatable)]
