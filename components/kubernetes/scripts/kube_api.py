"""The Kubernetes API as a pod's service account reaches it (standard library only): shipped beside the scripts that
import it, in the same ConfigMap, so `python3 /etc/gpufleet/<script>.py` finds it on its own directory."""

from __future__ import annotations

import json
import os
import ssl
import urllib.request

ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def call(method: str, path: str, body: object = None, kind: str = "application/json") -> dict:
    """One API request with the pod's token, checked against the cluster's CA; the JSON answer."""
    host = os.environ["KUBERNETES_SERVICE_HOST"]
    port = os.environ["KUBERNETES_SERVICE_PORT"]
    with open(f"{ACCOUNT}/token") as handle:
        token = handle.read().strip()
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"https://{host}:{port}{path}", data=data, method=method,
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": kind})
    context = ssl.create_default_context(cafile=f"{ACCOUNT}/ca.crt")
    with urllib.request.urlopen(request, context=context, timeout=30) as response:
        return json.load(response)
