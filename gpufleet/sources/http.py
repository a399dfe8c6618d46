"""HTTP(S) reads for the source readers: one GET with a timeout, errors as SourceError naming the URL.

The URLs come from the lock file, so a lock whose URLs point at a mirror or a local test server is read the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from email.message import Message

TIMEOUT_S = 60.0
MAX_BYTES = 2 << 30  # the largest download the lock names (DOCA's host package) is well under this


class SourceError(Exception):
    """A source could not be read, or answered something the lock refuses; the message names the source and what
    to do."""


@dataclass(frozen=True)
class Response:
    url: str
    status: int
    headers: Message
    body: bytes


def get(url: str, headers: dict[str, str] | None = None, accept_status: tuple[int, ...] = (200,)) -> Response:
    """GET `url`; a status outside `accept_status` or a network failure raises SourceError naming the URL."""
    # urllib (http.client, ssl, email) is imported by a read only: `images check` takes SourceError from here too.
    import urllib.error
    import urllib.request

    sent = {"User-Agent": "gpufleet-lock-resolve", **(headers or {})}
    credentials = sent.pop("Authorization", None)
    request = urllib.request.Request(url, headers=sent)
    if credentials is not None:
        # urllib copies ordinary headers onto a redirect; a registry's token must not reach the storage it
        # redirects blobs to (a presigned URL refuses a second credential, and the token is not its business)
        request.add_unredirected_header("Authorization", credentials)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:  # noqa: S310 (the lock names http(s) URLs)
            body = answer.read(MAX_BYTES + 1)
            status, found_headers, final = answer.status, answer.headers, answer.url
    except urllib.error.HTTPError as refused:
        body = refused.read() if refused.fp is not None else b""
        status, found_headers, final = refused.code, refused.headers, url
    except (urllib.error.URLError, OSError, ValueError) as failed:
        reason = getattr(failed, "reason", failed)
        raise SourceError(f"{url}: cannot be read ({reason})") from None
    if len(body) > MAX_BYTES:
        raise SourceError(f"{url}: larger than {MAX_BYTES} bytes")
    if status not in accept_status:
        raise SourceError(f"{url}: HTTP {status}")
    return Response(final, status, found_headers, body)
