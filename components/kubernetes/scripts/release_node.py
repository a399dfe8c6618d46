"""Remove the node-check startup taint from this pod's own node (standard library only; runs after the node check
passed). NODE_NAME comes from the downward API (spec.nodeName); the service account may get and patch nodes.

The patch is a JSON patch guarded by the node's resourceVersion (a `test` op), so a taint another controller added
in between is never dropped: a conflict fails this run and the pod's restart tries again.
"""

from __future__ import annotations

import os
import sys

from kube_api import call

KEY, VALUE, EFFECT = os.environ["NODE_CHECK_TAINT"].replace("=", ":").split(":")


def main() -> int:
    path = f"/api/v1/nodes/{os.environ['NODE_NAME']}"
    node = call("GET", path)
    taints = node["spec"].get("taints", [])
    kept = [t for t in taints if not (t["key"] == KEY and t.get("effect") == EFFECT)]
    if kept == taints:
        print(f"{KEY}:{EFFECT} is not on the node: nothing to remove")
        return 0
    call("PATCH", path, [{"op": "test", "path": "/metadata/resourceVersion",
                          "value": node["metadata"]["resourceVersion"]},
                         {"op": "replace", "path": "/spec/taints", "value": kept}],
         "application/json-patch+json")
    print(f"node check passed: removed {KEY}={VALUE}:{EFFECT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
