"""A resolved-facts file (images/lock.resolved.yaml's model) covering given needs, for tests of what reads it: the
gate logic under test compares needs with records, so each record carries the lock's own pinned values."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from gpufleet.lock.facts import (
    AptPackage,
    AptRepositoryFact,
    BaseImageFact,
    DownloadFact,
    ImageFact,
    ManagedVersionFact,
    ResolvedFacts,
)
from gpufleet.lock.needs import AptNeed, BaseNeed, DownloadNeed, ImageNeed, ManagedNeed, Need
from gpufleet.lock_resolve import write_facts

READ_AT = datetime(2026, 11, 20, tzinfo=timezone.utc)
SHA = "ab" * 32


def record(needs: list[Need], read_at: datetime = READ_AT) -> ResolvedFacts:
    apt, downloads, images, managed, bases = {}, {}, {}, {}, {}
    for need in needs:
        seen = {"source": f"test record of {need.key}", "read_at": read_at}
        if isinstance(need, AptNeed):
            apt[need.key] = AptRepositoryFact(**seen, signed_by=need.fingerprint or "A" * 40, in_release_sha256=SHA,
                                              packages={f"{n}={v or '1'}": AptPackage(
                                                  architecture="amd64", filename=f"{n}.deb", size=1, sha256=SHA)
                                                  for n, v in need.packages})
        elif isinstance(need, DownloadNeed):
            downloads[need.key] = DownloadFact(**seen, sha256=need.sha256 or SHA, size=1,
                                               key_fingerprint=need.key_fingerprint)
        elif isinstance(need, ImageNeed):
            images[need.key] = ImageFact(**seen, digest=f"sha256:{SHA}", media_type="application/vnd.oci.image.index"
                                         ".v1+json", platforms={"linux/amd64": f"sha256:{'cd' * 32}"})
        elif isinstance(need, ManagedNeed):
            managed[need.key] = ManagedVersionFact(**seen, version="v1.2.3" if need.name else "1.36.1-aliyun.1")
        elif isinstance(need, BaseNeed):
            # Alibaba's DescribeImages spells the boot mode UEFI or BIOS.
            bases[need.key] = BaseImageFact(**seen, image_id="ami-0fedcba9876543210",
                                            boot_mode=need.boot_mode.upper() if need.boot_mode else None)
    return ResolvedFacts(apt=apt, downloads=downloads, images=images, managed=managed, base_images=bases)


def write_beside(lock_path: Path, facts: ResolvedFacts) -> Path:
    return write_facts(lock_path, facts)
