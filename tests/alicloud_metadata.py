"""A local ECS metadata service in security hardening mode, for the scripts that read it (node scripts, pod
scripts): PUT /latest/api/token issues a session token, a read without it is refused."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

TOKEN = "tok-7f3a"


class HardenedMetadata(BaseHTTPRequestHandler):
    """ECS metadata in security hardening mode: PUT /latest/api/token with a TTL of 1 to 21600 s issues a token;
    a read without it is refused (ECS user guide, view-instance-metadata)."""

    items: dict[str, str] = {}
    refused: list[str] = []

    def do_PUT(self) -> None:  # noqa: N802 - the http.server hook name
        ttl = self.headers.get("X-aliyun-ecs-metadata-token-ttl-seconds", "")
        if self.path != "/latest/api/token" or not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
            self._answer(400, "")
        else:
            self._answer(200, TOKEN)

    def do_GET(self) -> None:  # noqa: N802
        if self.headers.get("X-aliyun-ecs-metadata-token") != TOKEN:
            self.refused.append(self.path)
            self._answer(403, "")
            return
        found = self.items.get(self.path.removeprefix("/latest/meta-data/"))
        self._answer(200, found) if found is not None else self._answer(404, "")

    def _answer(self, status: int, body: str) -> None:
        self.send_response(status)
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def alicloud_metadata() -> Iterator[tuple[str, type[HardenedMetadata]]]:
    """The server's base URL and its handler class (items to answer, reads refused)."""
    handler = type("Metadata", (HardenedMetadata,), {"items": {}, "refused": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()
    server.server_close()
