"""The base image each Alibaba bake starts from: the lock's intent per boot mode (a name_regex, or a pinned id) and
the id `gpufleet lock resolve --only base` recorded for it in images/lock.resolved.yaml. The bake builds from the
recorded id, never from a name looked up per run, so a stack read back never starts a new bake."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ...lock.boot_modes import NAMES, BootMode, same_boot_mode
from ...lock.facts import base_image_key

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ...lock.facts import ResolvedFacts
    from ...lock.model import BaseImage, Lock

RESOLVE_BASE = "gpufleet lock resolve --only base"
BaseStatus = Literal["pinned", "recorded", "unresolved", "unconfirmed"]


class BaseImageRefused(ValueError):
    """A recorded base image the lock's intent does not allow (its boot mode differs); the message names both."""


@dataclass(frozen=True)
class BakeBase:
    """What one bake (one boot mode) starts from."""

    field: str
    """The lock's field, e.g. base_images.alicloud.cn-wulanchabu.uefi."""
    boot_mode: BootMode | None
    image_id: str | None
    """The pinned id or the recorded one; None while unconfirmed or not resolved yet (offline plans only)."""
    status: BaseStatus
    reference: str | None
    """What `lock resolve` reads: the lock's name_regex (None for a pinned or unconfirmed base)."""

    def unresolved_message(self) -> str:
        return (f"images/lock.yaml {self.field}: no base image id is recorded for name_regex {self.reference!r} "
                f"(images/lock.resolved.yaml has no fact for it), so nothing was created: run `{RESOLVE_BASE}` to "
                "record the image id the bake starts from, then run this again (`gpufleet plan` shows the image "
                "stack offline meanwhile)")


def bake_base(field: str, base: BaseImage, facts: ResolvedFacts, cloud: str, region: str) -> BakeBase:
    """The id a bake starts from: pinned in the lock, or (status resolved) recorded by `lock resolve`. A recorded
    fact of another boot mode than the lock's intent is refused: the image would not boot the types it is for."""
    if base.status != "resolved" or base.name_regex is None:
        status: BaseStatus = "pinned" if base.parent_image else "unconfirmed"
        return BakeBase(field, base.boot_mode, base.parent_image, status, None)
    fact = facts.base_images.get(base_image_key(cloud, region, base.name_regex))
    if fact is None:
        return BakeBase(field, base.boot_mode, None, "unresolved", base.name_regex)
    if base.boot_mode is not None and not same_boot_mode(fact.boot_mode, base.boot_mode):
        boots = fact.boot_mode or "a boot mode it does not record"
        raise BaseImageRefused(
            f"images/lock.yaml {field}: the recorded base image {fact.image_id} boots {boots} "
            f"(images/lock.resolved.yaml, read from {fact.source} at {fact.read_at:%Y-%m-%d}), "
            f"but the lock wants {NAMES[base.boot_mode]} ({base.boot_mode}): check name_regex, then run "
            f"`{RESOLVE_BASE}` again")
    return BakeBase(field, base.boot_mode, fact.image_id, "recorded", base.name_regex)


def bake_bases(lock: Lock, facts: ResolvedFacts, cloud: str, region: str,
               boot_modes: Iterable[BootMode | None]) -> dict[BootMode | None, BakeBase | None]:
    """Each boot mode's base in a build region (None where the lock has no base image of that boot mode)."""
    found: dict[BootMode | None, BakeBase | None] = {}
    for mode in boot_modes:
        base = lock.base_image_entry(cloud, region, mode)
        field = f"base_images.{cloud}.{region}" + (f".{mode}" if mode else "")
        found[mode] = bake_base(field, base, facts, cloud, region) if base is not None else None
    return found
