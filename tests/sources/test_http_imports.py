"""The HTTP client (urllib.request: http.client, ssl, email) loads when a source is read, not when SourceError is
imported: `gpufleet images check` reads no source and spent ~25 ms importing it (issue 37). In a fresh interpreter."""

from __future__ import annotations

from fresh_python import last_line


def test_images_check_loads_no_http_client() -> None:
    code = (
        "import sys\n"
        "from gpufleet.cli import app\n"
        "try:\n"
        "    app(['images', 'check'])\n"
        "except SystemExit as done:\n"
        "    assert done.code == 0, done.code\n"
        "print(sorted(m for m in ('urllib.request', 'http.client', 'ssl') if m in sys.modules))\n"
    )
    assert last_line(code) == "[]"
