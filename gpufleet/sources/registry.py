"""Container image tags resolved to digests through a registry's distribution API (the OCI distribution spec, which
Docker's registry v2 API is), per platform, for `gpufleet lock resolve`.

A tag is read with GET /v2/<repository>/manifests/<tag>; the digest is the sha256 of the bytes the registry serves,
so it is the digest a node's pull by that tag would get. An index (or Docker manifest list) names one manifest per
platform; a single manifest's platform is in its config blob. Registries that ask for a bearer token get an anonymous
one from the realm their challenge names, the way `docker pull` does without a login.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ..lock.facts import ImageFact
from .http import Response, SourceError
from .registry_auth import RegistryClient, basic_credentials

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
INDEX_MEDIA_TYPES = (OCI_INDEX, DOCKER_MANIFEST_LIST)
MANIFEST_MEDIA_TYPES = (OCI_MANIFEST, DOCKER_MANIFEST)
ACCEPT = ", ".join(INDEX_MEDIA_TYPES + MANIFEST_MEDIA_TYPES)
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


@dataclass(frozen=True)
class ImageReference:
    """`registry/repository:tag` as the lock writes it."""

    registry: str
    repository: str
    tag: str

    @property
    def api(self) -> str:
        """The repository's distribution API root; plain HTTP on loopback only, as Docker treats it."""
        host = self.registry.rsplit(":", 1)[0] if not self.registry.endswith("]") else self.registry
        scheme = "http" if host in LOOPBACK_HOSTS else "https"
        return f"{scheme}://{self.registry}/v2/{self.repository}"

    def __str__(self) -> str:
        return f"{self.registry}/{self.repository}:{self.tag}"


def parse_reference(reference: str) -> ImageReference:
    """Split `registry/repository:tag`; the registry must be named (no implied Docker Hub) and the tag given."""
    registry, slash, rest = reference.partition("/")
    repository, colon, tag = rest.rpartition(":")
    if not slash or not colon or "/" in tag or not repository or not tag or "@" in reference:
        raise SourceError(f"{reference}: not an image reference of the form registry/repository:tag")
    if "." not in registry and ":" not in registry and registry != "localhost":
        raise SourceError(f"{reference}: name the registry host first (e.g. docker.io/{reference}), "
                          "the lock resolves no implied registry")
    return ImageReference(registry, repository, tag)


def resolve_image(reference: str, platforms: Sequence[str] = ("linux/amd64",), now: datetime | None = None,
                  credentials: Callable[[str], str | None] = basic_credentials) -> ImageFact:
    """The digest `reference`'s tag points at now, and each wanted platform's ("os/arch" or "os/arch/variant")
    manifest digest; SourceError names the registry's refusal, an unknown tag or a platform the image lacks."""
    image = parse_reference(reference)
    client = RegistryClient(str(image), credentials)
    manifest_url = f"{image.api}/manifests/{image.tag}"
    answer = client.get(manifest_url, {"Accept": ACCEPT})
    if answer.status == 404:
        raise SourceError(f"{manifest_url}: tag {image.tag!r} is not in repository {image.registry}/"
                          f"{image.repository} ({registry_error(answer)}); check the tag in the lock")
    expect_ok(answer)
    digest = verified_digest(answer)
    document = json_body(answer)
    media_type = document.get("mediaType") or answer.headers.get_content_type()
    if media_type in INDEX_MEDIA_TYPES:
        found = index_platforms(manifest_url, document, platforms)
    elif media_type in MANIFEST_MEDIA_TYPES:
        found = manifest_platforms(client, image, manifest_url, document, platforms, digest)
    else:
        raise SourceError(f"{manifest_url}: media type {media_type!r} is none of {ACCEPT}")
    return ImageFact(source=manifest_url, read_at=now or datetime.now(timezone.utc), digest=digest,
                     media_type=media_type, platforms=found)


def index_platforms(url: str, index: dict[str, Any], wanted: Sequence[str]) -> dict[str, str]:
    """Each wanted platform's manifest digest in an index; "os/arch" without a variant takes the one manifest of
    that os/arch (several, e.g. arm v6 and v7, must be told apart with a variant)."""
    listed = [(platform_name(entry.get("platform") or {}), entry["digest"]) for entry in index.get("manifests", [])]
    # buildx attaches attestation manifests as platform unknown/unknown: nothing a node pulls
    listed = [(name, digest) for name, digest in listed if not name.startswith("unknown/")]
    found = {}
    for platform in wanted:
        matches = [(name, digest) for name, digest in listed if name == platform or name.startswith(f"{platform}/")]
        exact = [match for match in matches if match[0] == platform]
        if len(exact) == 1 or len(matches) == 1:
            found[platform] = (exact or matches)[0][1]
            continue
        names = ", ".join(sorted({name for name, _ in listed})) or "none"
        problem = "several manifests match" if matches else "the index has no manifest for"
        raise SourceError(f"{url}: {problem} platform {platform}; the index has: {names}")
    return found


def manifest_platforms(client: RegistryClient, image: ImageReference, url: str, manifest: dict[str, Any],
                       wanted: Sequence[str], digest: str) -> dict[str, str]:
    """A single manifest serves the one platform its config blob names: every wanted platform must be it."""
    config_digest = (manifest.get("config") or {}).get("digest", "")
    blob_url = f"{image.api}/blobs/{config_digest}"
    answer = client.get(blob_url, {})
    expect_ok(answer)
    if f"sha256:{hashlib.sha256(answer.body).hexdigest()}" != config_digest:
        raise SourceError(f"{blob_url}: the config blob's sha256 is not its digest {config_digest}")
    platform = platform_name(json_body(answer))
    for name in wanted:
        if name != platform and not platform.startswith(f"{name}/"):
            raise SourceError(f"{url}: a single-platform image for {platform}, not {name}; "
                              "pin a tag whose image is built for it")
    return dict.fromkeys(wanted, digest)


def platform_name(described: dict[str, Any]) -> str:
    """"os/architecture[/variant]" from an index entry's platform or an image config."""
    parts = [described.get("os", ""), described.get("architecture", ""), described.get("variant", "")]
    return "/".join(part for part in parts if part)


def verified_digest(answer: Response) -> str:
    """sha256 of the body; a Docker-Content-Digest that differs means the bytes are not what the registry names."""
    digest = f"sha256:{hashlib.sha256(answer.body).hexdigest()}"
    named = answer.headers.get("Docker-Content-Digest")
    if named and named != digest:
        raise SourceError(f"{answer.url}: the registry names digest {named} but the manifest's bytes hash to "
                          f"{digest}; a proxy between here and the registry changed them")
    return digest


def expect_ok(answer: Response) -> None:
    if answer.status != 200:
        raise SourceError(f"{answer.url}: HTTP {answer.status} ({registry_error(answer)})")


def json_body(answer: Response) -> dict[str, Any]:
    try:
        document = json.loads(answer.body)
    except ValueError:
        document = None
    if not isinstance(document, dict):
        raise SourceError(f"{answer.url}: not a JSON object")
    return document


def registry_error(answer: Response) -> str:
    """The distribution API's error codes and messages ({"errors": [{"code", "message"}]}), else the status."""
    try:
        errors = json.loads(answer.body).get("errors") or []
        return "; ".join(f"{error.get('code')}: {error.get('message')}" for error in errors) or f"HTTP {answer.status}"
    except (ValueError, AttributeError):
        return f"HTTP {answer.status}"
