"""Downloads the bake makes (installers, wheels, keys): the sha256 of the bytes read, compared with the value the
lock pins (a vendor's published checksum or an earlier read), and a PGP key's primary fingerprint."""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone

from ..lock.facts import DownloadFact
from .http import SourceError, get
from .openpgp import primary_fingerprints


def resolve_download(url: str, expected_sha256: str | None = None, key_fingerprint: str | None = None,
                     now: datetime | None = None) -> DownloadFact:
    """Read `url`; the bytes must hash to `expected_sha256` where the lock pins one, and key material must hold
    exactly `key_fingerprint` where one is pinned (a key is recognised by its fingerprint being asked for)."""
    body = get(url).body
    sha256 = hashlib.sha256(body).hexdigest()
    if expected_sha256 and sha256 != expected_sha256:
        raise SourceError(f"{url}: its bytes hash to sha256 {sha256}, the lock pins {expected_sha256}: the file "
                          "changed at its source; read why before pinning the new value")
    fingerprint = None
    if key_fingerprint is not None or url.endswith((".asc", ".key", ".gpg", ".pub")) or "pks/lookup" in url:
        keys = primary_fingerprints(body, url)
        if len(keys) != 1:
            raise SourceError(f"{url}: holds {len(keys)} primary keys ({', '.join(keys)}); the lock trusts one")
        fingerprint = keys[0]
        if key_fingerprint and fingerprint != key_fingerprint:
            raise SourceError(f"{url}: holds key {fingerprint}, the lock pins {key_fingerprint}: refused")
    return DownloadFact(source=url, read_at=now or datetime.now(timezone.utc), sha256=sha256, size=len(body),
                        key_fingerprint=fingerprint)
