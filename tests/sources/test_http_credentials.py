"""gpufleet.sources.http.get sends an Authorization header to the URL asked for only, never on to where it redirects
(registries redirect blob reads to storage whose presigned URLs refuse a second credential)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from gpufleet.sources.http import get


class Recording(BaseHTTPRequestHandler):
    """Answers 200 with a body, or 307 to `redirect_to`; keeps each request's Authorization header."""

    redirect_to = ""
    seen: list[str | None] = []

    def do_GET(self) -> None:  # noqa: N802 - the http.server hook name
        self.seen.append(self.headers.get("Authorization"))
        self.send_response(307 if self.redirect_to else 200)
        if self.redirect_to:
            self.send_header("Location", self.redirect_to)
        self.send_header("Content-Length", "4")
        self.end_headers()
        self.wfile.write(b"blob")

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def servers() -> Iterator[tuple[str, type[Recording], type[Recording]]]:
    """A storage server and a registry-like server that redirects to it: the registry's URL and both handlers."""
    storage = type("Storage", (Recording,), {"redirect_to": "", "seen": []})
    running = [ThreadingHTTPServer(("127.0.0.1", 0), storage)]
    target = f"http://127.0.0.1:{running[0].server_address[1]}/blob?signed=1"
    registry = type("Registry", (Recording,), {"redirect_to": target, "seen": []})
    running.append(ThreadingHTTPServer(("127.0.0.1", 0), registry))
    for server in running:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{running[1].server_address[1]}/v2/x/blobs/sha256:0", registry, storage
    for server in running:
        server.shutdown()
        server.server_close()


def test_the_token_goes_to_the_registry_and_not_to_the_storage_it_redirects_to(
        servers: tuple[str, type[Recording], type[Recording]]) -> None:
    url, registry, storage = servers
    answer = get(url, {"Authorization": "Bearer registry-token", "Accept": "*/*"})
    assert answer.body == b"blob"
    assert answer.url.endswith("/blob?signed=1")
    assert registry.seen == ["Bearer registry-token"]
    assert storage.seen == [None]
