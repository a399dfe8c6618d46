"""Mark this pod's own node as checked (standard library only; runs after the node check passed): set the label
NODE_CHECK_LABEL (key=value) and, where the pool carries one, remove the startup taint NODE_CHECK_TAINT
(key=value:effect). NODE_NAME comes from the downward API (spec.nodeName); the service account may get and patch nodes.

The patch is a JSON patch guarded by the node's resourceVersion (a `test` op), so a taint or label another controller
changed in between is never dropped: a conflict fails this run and the pod's restart tries again.
"""

from __future__ import annotations

import os
import sys

from kube_api import call

LABEL_KEY, LABEL_VALUE = os.environ["NODE_CHECK_LABEL"].split("=")
TAINT = os.environ.get("NODE_CHECK_TAINT")


def pointer(key: str) -> str:
    """A label key as one JSON pointer token (RFC 6901: `~` as ~0, `/` as ~1)."""
    return key.replace("~", "~0").replace("/", "~1")


def main() -> int:
    path = f"/api/v1/nodes/{os.environ['NODE_NAME']}"
    node = call("GET", path)
    patch: list[dict] = []
    done: list[str] = []
    if node["metadata"].get("labels", {}).get(LABEL_KEY) != LABEL_VALUE:
        # `add` on an object member sets it whether or not it exists; a node always has labels (the kubelet's).
        patch.append({"op": "add", "path": f"/metadata/labels/{pointer(LABEL_KEY)}", "value": LABEL_VALUE})
        done.append(f"set {LABEL_KEY}={LABEL_VALUE}")
    if TAINT:
        key, _, effect = TAINT.replace("=", ":").split(":")
        taints = node["spec"].get("taints", [])
        kept = [t for t in taints if not (t["key"] == key and t.get("effect") == effect)]
        if kept != taints:
            patch.append({"op": "replace", "path": "/spec/taints", "value": kept})
            done.append(f"removed {TAINT}")
    if not patch:
        print(f"node already carries {LABEL_KEY}={LABEL_VALUE} and no startup taint: nothing to change")
        return 0
    call("PATCH", path, [{"op": "test", "path": "/metadata/resourceVersion",
                          "value": node["metadata"]["resourceVersion"]}, *patch],
         "application/json-patch+json")
    print(f"node check passed: {', '.join(done)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
