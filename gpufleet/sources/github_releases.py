"""A file published as a GitHub release asset: its sha256 as GitHub lists it, and the bytes read against it.

GitHub's REST API "Get a release by tag name" (GET /repos/OWNER/REPO/releases/tags/TAG) lists each asset with a
`digest`, "sha256:<hex>", computed by GitHub when the asset was uploaded (GitHub changelog 2025-06-03, "Releases now
expose digests for release assets"; google/go-github #3628 added ReleaseAsset.Digest from the same answer). Assets
uploaded before then have none: such a file has no published checksum and the lock must pin one itself.
"""

from __future__ import annotations

import json
import posixpath
import re
from datetime import datetime, timezone
from urllib.parse import unquote, urlsplit

from ..lock.facts import DownloadFact, PublishedChecksum
from .downloads import resolve_download
from .http import SourceError, get

# GitHub's media type for the REST API's JSON (docs.github.com, "Media types").
ACCEPT = {"Accept": "application/vnd.github+json"}
DIGEST = re.compile(r"^sha256:([0-9a-f]{64})$")


def asset_digest(release: str, name: str) -> str:
    """The sha256 GitHub lists for asset `name` of the release at API URL `release`."""
    try:
        answer = json.loads(get(release, ACCEPT).body)
        assets = {asset["name"]: asset for asset in answer["assets"]}
    except (ValueError, KeyError, TypeError):
        raise SourceError(f"{release}: not a GitHub release (no assets list)") from None
    asset = assets.get(name)
    if asset is None:
        raise SourceError(f"{release}: lists no asset {name} (it has {', '.join(sorted(assets)) or 'none'})")
    found = DIGEST.match(asset.get("digest") or "")
    if found is None:
        raise SourceError(f"{release}: asset {name} has no sha256 digest ({asset.get('digest')!r}; GitHub lists one "
                          "only for assets uploaded since June 2025): pin the file's sha256 in the lock instead")
    return found.group(1)


def resolve_release_asset(url: str, release: str, now: datetime | None = None) -> DownloadFact:
    """Read `url`, an asset of the GitHub release at API URL `release` (matched by file name, so a mirror of both
    answers the same): its bytes must hash to the digest GitHub lists, which is recorded as the published one."""
    name = unquote(posixpath.basename(urlsplit(url).path))
    digest = asset_digest(release, name)
    fact = resolve_download(url, now=now or datetime.now(timezone.utc))
    if fact.sha256 != digest:
        raise SourceError(f"{url}: its bytes hash to sha256 {fact.sha256}, GitHub lists {digest} for the asset in "
                          f"{release}: not the file GitHub published")
    return fact.model_copy(update={"published": PublishedChecksum(
        sha256=digest, source=f"{release} assets[name={name}].digest")})
