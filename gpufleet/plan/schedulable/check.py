"""Which pods have no node: each pod template against each node group's templates.

A pod is admitted where some node template of some group admits it (semantics.admission_gaps). A DaemonSet is meant
for every node whose labels its nodeSelector and required node affinity choose (as the DaemonSet controller picks
nodes: pkg/controller/daemon/daemon_controller.go NodeShouldRunDaemonPod, which runs the scheduler's node affinity
and taint filters per node); on each of those it must also tolerate the taints and fit, or that group's nodes run
without it. A DaemonSet that chooses no node at all is reported too: it was made for nodes the stack does not make.
The DaemonSet controller's own tolerations (node.kubernetes.io/not-ready, unreachable, disk-, memory- and
pid-pressure, unschedulable, network-unavailable: pkg/controller/daemon/util/daemonset_util.go) match only taints the
node lifecycle sets at run time, which no template carries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .pods import PodSource
from .semantics import NodeTemplate, admission_gaps, selection_gaps

NO_GROUP = "no node group"


@dataclass(frozen=True)
class Unschedulable:
    """A pod template with no node (or a DaemonSet missing from nodes it is meant for), and per group why."""

    pod: str
    origin: str
    daemon: bool
    gaps: dict[str, list[str]]
    """Node group (or template title, where a group's kinds of node differ) -> what it lacks for the pod."""

    @property
    def message(self) -> str:
        reasons = "; ".join(f"{title}: {', '.join(lacks)}" for title, lacks in self.gaps.items())
        return (f"{self.pod} misses nodes it is meant for: {reasons}" if self.daemon
                else f"no node admits {self.pod}: {reasons}")

    def to_json(self) -> dict[str, Any]:
        return {"pod": self.pod, "origin": self.origin, "groups": self.gaps}


def _by_group(found: Sequence[tuple[NodeTemplate, list[str]]]) -> dict[str, list[str]]:
    """Gaps per node template, a group's templates folded into the group where they lack the same."""
    groups: dict[str, list[tuple[NodeTemplate, list[str]]]] = {}
    for node, gaps in found:
        groups.setdefault(node.group, []).append((node, gaps))
    folded: dict[str, list[str]] = {}
    for group, entries in groups.items():
        if all(gaps == entries[0][1] for _, gaps in entries):
            folded[group] = entries[0][1]
        else:
            folded.update((node.title, gaps) for node, gaps in entries)
    return folded


def _daemon_gaps(pod: PodSource, nodes: Sequence[NodeTemplate]) -> dict[str, list[str]] | None:
    chosen = [node for node in nodes if not selection_gaps(pod.spec, node.labels)]
    if not chosen:
        return _by_group([(node, selection_gaps(pod.spec, node.labels)) for node in nodes]) or {NO_GROUP: [NO_GROUP]}
    missing = [(node, gaps) for node in chosen if (gaps := admission_gaps(pod.spec, node))]
    return _by_group(missing) or None


def _pod_gaps(pod: PodSource, nodes: Sequence[NodeTemplate]) -> dict[str, list[str]] | None:
    gaps = [(node, admission_gaps(pod.spec, node)) for node in nodes]
    if not gaps:
        return {NO_GROUP: [NO_GROUP]}
    return None if any(not lacks for _, lacks in gaps) else _by_group(gaps)


def unschedulable(pods: Sequence[PodSource], nodes: Sequence[NodeTemplate]) -> list[Unschedulable]:
    """Every pod template no node admits, and every DaemonSet that misses nodes it is meant for, in pod order."""
    found = []
    for pod in pods:
        gaps = _daemon_gaps(pod, nodes) if pod.daemon else _pod_gaps(pod, nodes)
        if gaps is not None:
            found.append(Unschedulable(pod.name, pod.origin, pod.daemon, gaps))
    return found
