"""Boot modes: an Alibaba Cloud instance type boots UEFI, Legacy BIOS or both (Alibaba's boot-mode table), an image
boots one, so the lock keeps an image per boot mode and a node group boots the one its types can."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal, TypeVar

BootMode = Literal["uefi", "bios"]
# The order a group takes when its types boot both: UEFI first (the newer firmware).
BOOT_MODES: tuple[BootMode, ...] = ("uefi", "bios")
NAMES: dict[str, str] = {"uefi": "UEFI", "bios": "Legacy BIOS"}

Entry = TypeVar("Entry")


def by_boot_mode(value: Entry | Mapping[BootMode, Entry]) -> dict[BootMode | None, Entry]:
    """A lock value kept per boot mode ({uefi: ..., bios: ...}) as it is, and a single one under None (one image
    whose boot mode the lock does not record: every cloud but Alibaba)."""
    if isinstance(value, Mapping):
        return {mode: value[mode] for mode in BOOT_MODES if mode in value}
    return {None: value}


def common_boot_mode(type_modes: Iterable[Iterable[str]], image_modes: Iterable[str]) -> BootMode | None:
    """The boot mode every type of a group can boot and the lock has an image for, UEFI first; None where none."""
    shared = set(image_modes)
    for modes in type_modes:
        shared &= set(modes)
    return next((mode for mode in BOOT_MODES if mode in shared), None)


def spelled(modes: Iterable[str | None]) -> str:
    """['uefi', 'bios'] -> 'UEFI, Legacy BIOS' (for messages)."""
    return ", ".join(NAMES.get(mode or "", "unrecorded") for mode in modes) or "none"


def same_boot_mode(recorded: str | None, intent: str) -> bool:
    """Alibaba's BootMode (UEFI, BIOS, UEFI-Preferred) as a resolved fact records it, against the lock's intent."""
    return recorded is not None and recorded.strip().lower() == intent
