"""Downloads the bake makes (installers, wheels, keys): the sha256 of the bytes read, compared with the value the
lock pins (a vendor's published checksum or an earlier read), a PGP key's primary fingerprint, and a wheel's
Requires-Python and Requires-Dist (its .dist-info/METADATA, core metadata's email header format) against the lock's
record of them."""

from __future__ import annotations

import hashlib
import io
import zipfile
from datetime import datetime, timezone
from email.parser import HeaderParser

from ..lock.facts import DownloadFact
from .http import SourceError, get
from .openpgp import primary_fingerprints


def _wheel_requires(body: bytes, url: str) -> tuple[str | None, tuple[str, ...]]:
    """A wheel's Requires-Python and Requires-Dist lines, from its one top-level .dist-info/METADATA."""
    try:
        with zipfile.ZipFile(io.BytesIO(body)) as wheel:
            found = [name for name in wheel.namelist()
                     if name.count("/") == 1 and name.endswith(".dist-info/METADATA")]
            if len(found) != 1:
                raise SourceError(f"{url}: a wheel holds one .dist-info/METADATA, this one {len(found)}")
            headers = HeaderParser().parsestr(wheel.read(found[0]).decode())
    except zipfile.BadZipFile:
        raise SourceError(f"{url}: not a wheel (no zip archive)") from None
    return headers.get("Requires-Python"), tuple(headers.get_all("Requires-Dist") or ())


def resolve_download(url: str, expected_sha256: str | None = None, key_fingerprint: str | None = None,
                     now: datetime | None = None,
                     wheel_requires_pinned: tuple[str | None, tuple[str, ...]] | None = None) -> DownloadFact:
    """Read `url`; the bytes must hash to `expected_sha256` where the lock pins one, key material must hold exactly
    `key_fingerprint` where one is pinned (a key is recognised by its fingerprint being asked for), and a wheel's
    METADATA must say the Requires-Python and Requires-Dist the lock records (`wheel_requires_pinned`)."""
    body = get(url).body
    sha256 = hashlib.sha256(body).hexdigest()
    if expected_sha256 and sha256 != expected_sha256:
        raise SourceError(f"{url}: its bytes hash to sha256 {sha256}, the lock pins {expected_sha256}: the file "
                          "changed at its source; read why before pinning the new value")
    if wheel_requires_pinned is not None:
        python, dist = read = _wheel_requires(body, url)
        if read != wheel_requires_pinned:
            raise SourceError(f"{url}: its METADATA says Requires-Python {python}, Requires-Dist {list(dist)}; the "
                              f"lock records {wheel_requires_pinned[0]}, {list(wheel_requires_pinned[1])}: copy them "
                              "from the wheel")
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
