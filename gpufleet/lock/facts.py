"""What `gpufleet lock resolve` read from each source, with its provenance (images/lock.resolved.yaml).

The lock says what to pin (a package version, a download URL, an image tag, an add-on name); the resolved file says
what its source answered when someone read it: the apt index entry, the bytes' sha256, the registry's digest, the
cloud API's version. `plan` and the pack read only this file, never the network. Every fact carries its `source` (the
URL or API call read) and `read_at` (UTC); a fact older than STALE_AFTER is a plan warning.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import Field

from ..yaml_model import StrictModel

SHA256 = r"^[0-9a-f]{64}$"
DIGEST = r"^sha256:[0-9a-f]{64}$"
FINGERPRINT = r"^[0-9A-F]{40}$"
STALE_AFTER = timedelta(days=90)


class Provenance(StrictModel):
    """Where and when a fact was read."""

    source: str = Field(..., min_length=3, description="the URL or API call the value was read from")
    read_at: datetime = Field(..., description="when it was read (UTC)")

    def stale(self, now: datetime) -> bool:
        return now - self.read_at > STALE_AFTER


class AptPackage(StrictModel):
    """One package=version as the repository's Packages index lists it for one architecture."""

    architecture: str
    filename: str
    size: int = Field(..., ge=0)
    sha256: str = Field(..., pattern=SHA256)


class AptRepositoryFact(Provenance):
    """A repository's InRelease, verified with a pinned key, and its Packages index entries for the pins."""

    signed_by: str = Field(..., pattern=FINGERPRINT, description="the primary key whose (sub)key signed InRelease")
    in_release_sha256: str = Field(..., pattern=SHA256)
    packages: dict[str, AptPackage] = Field(..., description="'name=version' -> its index entry")


class PublishedChecksum(StrictModel):
    """A vendor's own checksum for a download and the page that prints it."""

    sha256: str = Field(..., pattern=SHA256)
    source: str = Field(..., min_length=3)


class DownloadFact(Provenance):
    """A file fetched over HTTP(S): its sha256, the vendor's published one where there is one, and for a PGP key
    the primary key's fingerprint as `gpg --show-keys` prints it."""

    sha256: str = Field(..., pattern=SHA256)
    size: int = Field(..., ge=0)
    published: PublishedChecksum | None = Field(None, description="null: no published value, recorded as first seen")
    key_fingerprint: str | None = Field(None, pattern=FINGERPRINT)


class ImageFact(Provenance):
    """A container image tag resolved through the registry's distribution API."""

    digest: str = Field(..., pattern=DIGEST, description="what the tag pointed at: an index or a single manifest")
    media_type: str
    platforms: dict[str, str] = Field(
        default_factory=dict, description="'os/architecture' -> that platform's manifest digest (a single-platform "
        "manifest: its own digest)")


class ManagedVersionFact(Provenance):
    """A version a managed service chose or lists (an EKS add-on's default for a minor, ACK's full version)."""

    version: str = Field(..., min_length=1)
    default: bool | None = Field(None, description="the service's default for the minor, where it marks one")
    config_schema: dict[str, Any] | None = Field(None, description="the add-on's configuration JSON Schema")


class BaseImageFact(Provenance):
    """The image id a bake starts from, as the cloud resolved a parameter or name."""

    image_id: str = Field(..., min_length=1)
    name: str | None = None
    boot_mode: str | None = Field(None, description="e.g. UEFI, BIOS, UEFI-Preferred (Alibaba's BootMode)")


class ResolvedFacts(StrictModel):
    """images/lock.resolved.yaml: every fact read, keyed as gpufleet.lock.needs keys them."""

    schema_: int = Field(1, alias="schema")
    apt: dict[str, AptRepositoryFact] = Field(default_factory=dict, description="'URL SUITE' -> repository")
    downloads: dict[str, DownloadFact] = Field(default_factory=dict, description="URL -> download")
    images: dict[str, ImageFact] = Field(default_factory=dict, description="'repository:tag' -> image")
    managed: dict[str, ManagedVersionFact] = Field(
        default_factory=dict, description="'<service>/<minor>/<what>' -> version (e.g. eks/1.35/addon/vpc-cni)")
    base_images: dict[str, BaseImageFact] = Field(
        default_factory=dict, description="'<cloud>/<region>/<reference>' -> the id it resolved to")

    model_config = {**StrictModel.model_config, "populate_by_name": True}


def resolved_path(lock_path: Path) -> Path:
    """The resolved file beside a lock: images/lock.yaml -> images/lock.resolved.yaml."""
    return lock_path.with_name(f"{lock_path.stem}.resolved{lock_path.suffix}")


def base_image_key(cloud: str, region: str, reference: str) -> str:
    """ResolvedFacts.base_images' key of a base image: '<cloud>/<region>/<reference>' (Alibaba: the lock's
    name_regex)."""
    return f"{cloud}/{region}/{reference}"
