"""A local API server standing in for the endpoint a cloud returns for its Kubernetes cluster: /healthz answers
with a chosen status, over http:// or, as AKS and ACK endpoints are written (a host the probe prefixes with
https://), over TLS with a test certificate (the probe checks reachability, not the certificate)."""

from __future__ import annotations

import tempfile
import threading
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from local_tls import local_tls


def healthz_server(status: int, tls: bool = False) -> tuple[ThreadingHTTPServer, str]:
    """A running server and its URL (http://127.0.0.1:PORT, or https:// with tls); shut it down when done."""

    class Healthz(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802  (http.server's name)
            self.send_response(status if self.path == "/healthz" else 404)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Healthz)
    if tls:
        context, _ = local_tls(Path(tempfile.mkdtemp(prefix="gpufleet-api-server-")))
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"{'https' if tls else 'http'}://127.0.0.1:{server.server_address[1]}"


def closed_port() -> str:
    """host:port where nothing listens any more (a server that stopped)."""
    server, url = healthz_server(200)
    server.shutdown()
    server.server_close()
    return url.split("://", 1)[1]


@cache
def answering_host() -> str:
    """host:port of one TLS server answering /healthz with 200 for the whole session (recorded cloud answers name
    it as the cluster's endpoint host)."""
    _, url = healthz_server(200, tls=True)
    return url.split("://", 1)[1]
