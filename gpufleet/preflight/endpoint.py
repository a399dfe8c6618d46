"""The deployer reaches the Kubernetes API server (scheduler.endpoint): its host resolves from here and /healthz
answers. Cloud-neutral; each cloud's preflight finds the endpoint (EKS DescribeCluster, ...) and calls this.

Reachability only: no credentials are sent, and any HTTP answer (200, or 401/403 where anonymous requests are off)
proves the network path, so the server's certificate is not verified here (the cluster's own CA is not in the
system store; kubectl verifies it). A cluster that does not exist yet is a note, not a failure: `pulumi up` creates
it, and the next preflight probes it.
"""

from __future__ import annotations

import socket
import ssl
import urllib.error
import urllib.request
from urllib.parse import urlsplit

from .findings import Finding

CHECK = "endpoint"
TIMEOUT_S = 10
HOW = {
    "public": "add the address `pulumi up` and kubectl run from to scheduler.public_cidrs",
    "private": "run `pulumi up` and kubectl from inside the cluster's network (a runner or bastion there), or set "
               "scheduler.endpoint: public with public_cidrs",
}


def not_created(cloud: str, cluster: str) -> Finding:
    """The note for a cluster that does not exist yet."""
    return Finding(f"{cloud}-{CHECK}", "scheduler.endpoint", False,
                   f"cluster {cluster} does not exist yet, so its API server could not be probed",
                   "after `pulumi up` creates it, run preflight again: it resolves the endpoint and reaches /healthz")


def probe(cloud: str, url: str, access: str) -> list[Finding]:
    """A blocking finding when the endpoint's host does not resolve or /healthz does not answer from here."""
    host = urlsplit(url).hostname or url
    try:
        socket.getaddrinfo(host, urlsplit(url).port or 443)
    except OSError as exc:
        return [Finding(f"{cloud}-{CHECK}", "scheduler.endpoint", True,
                        f"the API server's host {host} does not resolve from here ({exc})", HOW[access])]
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # reachability only: nothing is sent
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/healthz", timeout=TIMEOUT_S, context=context):
            return []
    except urllib.error.HTTPError:
        return []  # the server answered (anonymous requests refused): the path is open
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return [Finding(f"{cloud}-{CHECK}", "scheduler.endpoint", True,
                        f"{url}/healthz did not answer from here within {TIMEOUT_S} s ({reason})", HOW[access])]
