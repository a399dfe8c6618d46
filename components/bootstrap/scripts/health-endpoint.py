#!/usr/bin/python3
"""Serve the node check result to the cloud's health probe on 127.0.0.1:$GPUFLEET_HEALTH_PORT.

200 with {"ApplicationHealthState": "Healthy"} once gpufleet-health passed, else 503 Unhealthy: the body
is what Azure's Application Health extension v2 reads, the status what a plain HTTP probe reads.
"""

import http.server
import json
import os

RUN = os.environ.get("GPUFLEET_RUN", "/run/gpufleet")


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the handler's method name
        healthy = os.path.exists(os.path.join(RUN, "healthy"))
        body = json.dumps({"ApplicationHealthState": "Healthy" if healthy else "Unhealthy"}).encode()
        self.send_response(200 if healthy else 503)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        """Probes arrive every few seconds: keep them out of the journal."""


if __name__ == "__main__":
    http.server.HTTPServer(("127.0.0.1", int(os.environ["GPUFLEET_HEALTH_PORT"])), Health).serve_forever()
