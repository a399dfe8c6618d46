"""Drain this pod's own node when ECS announces the release of its spot instance (standard library only).

ECS answers instance/spot/termination-time from the instance metadata with 404 until it schedules the release, then
with the release time, minutes ahead (ECS user guide, spot instances; the same read as the VM nodes' spot watcher,
components/bootstrap/scripts/spot-watcher.sh). Every read carries a session token from PUT /latest/api/token: the
metadata service may be in security hardening mode. On a notice the node is cordoned (spec.unschedulable) and each of
its pods is evicted through the Eviction API, so PodDisruptionBudgets hold and each pod gets its grace period; pods of
DaemonSets and static (mirror) pods are left, as `kubectl drain` leaves them. Evictions are retried every round
until the node is gone. NODE_NAME comes from the downward API; the service account may get and patch nodes, list
pods and create pods/eviction.
"""

from __future__ import annotations

import os
import sys
import time
import urllib.error
import urllib.request

from kube_api import call

METADATA = os.environ.get("ALICLOUD_METADATA", "http://100.100.100.200") + "/latest"
INTERVAL = float(os.environ.get("POLL_SECONDS", "5"))
MIRROR = "kubernetes.io/config.mirror"


def termination_time() -> str | None:
    """The announced release time, or None while ECS has announced nothing (404) or the service does not answer."""
    try:
        token_request = urllib.request.Request(f"{METADATA}/api/token", method="PUT",
                                               headers={"X-aliyun-ecs-metadata-token-ttl-seconds": "300"})
        with urllib.request.urlopen(token_request, timeout=5) as answer:
            token = answer.read().decode()
        read = urllib.request.Request(f"{METADATA}/meta-data/instance/spot/termination-time",
                                      headers={"X-aliyun-ecs-metadata-token": token})
        with urllib.request.urlopen(read, timeout=5) as answer:
            return answer.read().decode().strip() or None
    except (urllib.error.URLError, OSError):  # HTTPError (404) is a URLError
        return None


def evictable(pod: dict) -> bool:
    meta = pod["metadata"]
    owners = meta.get("ownerReferences") or []
    return (MIRROR not in (meta.get("annotations") or {}) and "deletionTimestamp" not in meta
            and not any(owner.get("kind") == "DaemonSet" for owner in owners))


def drain(node: str) -> None:
    """Cordon the node and ask each evictable pod on it to go; a pod told to wait (429: a PodDisruptionBudget) or
    whose eviction failed is asked again next round."""
    call("PATCH", f"/api/v1/nodes/{node}", {"spec": {"unschedulable": True}}, "application/merge-patch+json")
    pods = call("GET", f"/api/v1/pods?fieldSelector=spec.nodeName%3D{node}")["items"]
    for pod in filter(evictable, pods):
        name, namespace = pod["metadata"]["name"], pod["metadata"]["namespace"]
        try:
            call("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/eviction",
                 {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}})
            print(f"evicted {namespace}/{name}")
        except urllib.error.HTTPError as refused:
            if refused.code != 404:  # 404: the pod is already gone
                print(f"eviction of {namespace}/{name} refused ({refused.code}); asking again", file=sys.stderr)


def main(rounds: int | None = None) -> int:
    """Poll every INTERVAL seconds (`rounds` bounds the loop for tests); drain from the first notice on."""
    node = os.environ["NODE_NAME"]
    announced: str | None = None
    done = 0
    while rounds is None or done < rounds:
        announced = announced or termination_time()
        if announced:
            print(f"spot release announced for {announced}: draining {node}")
            drain(node)
        done += 1
        time.sleep(INTERVAL)
    return 0


if __name__ == "__main__":
    sys.exit(main())
