"""Compare what a lock needs with what `gpufleet lock resolve` recorded, offline: unresolved, different, or old.

`plan` shows each finding, `images check` fails on the unresolved and different ones, and a real `pulumi up` refuses
them before creating anything (a preview runs with a warning, so a pull request shows its diff before pins land).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from .boot_modes import same_boot_mode
from .facts import Provenance, ResolvedFacts
from .needs import RECORD, SECTION, AptNeed, BaseNeed, DownloadNeed, Need

Status = Literal["unresolved", "different", "stale"]


@dataclass(frozen=True)
class FactFinding:
    status: Status
    section: str
    key: str
    field: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"status": self.status, "fact": f"{self.section}: {self.key}", "field": self.field,
                "message": self.message}


def _recorded(need: Need, facts: ResolvedFacts) -> Provenance | None:
    return getattr(facts, RECORD[SECTION[type(need)]]).get(need.key)


def _apt_missing(need: AptNeed, packages: dict[str, object]) -> list[str]:
    """The pins a recorded index entry lacks (a pin of "" takes any version of the package)."""
    listed = {key.split("=", 1)[0] for key in packages}
    return [f"{name}={version}" if version else name for name, version in need.packages
            if (f"{name}={version}" not in packages if version else name not in listed)]


def _difference(need: Need, fact: Provenance) -> str | None:
    """Why a recorded fact does not back the lock's value, or None when it does."""
    if isinstance(need, AptNeed):
        missing = _apt_missing(need, fact.packages)  # type: ignore[attr-defined]
        if missing:
            return f"the recorded index lacks {', '.join(missing)}"
        if need.fingerprint and fact.signed_by != need.fingerprint:  # type: ignore[attr-defined]
            return f"recorded as signed by {fact.signed_by}, the lock pins {need.fingerprint}"  # type: ignore
    if isinstance(need, DownloadNeed):
        if need.sha256 and fact.sha256 != need.sha256:  # type: ignore[attr-defined]
            return f"{need.url} was read with sha256 {fact.sha256}, the lock pins {need.sha256}"  # type: ignore
        if need.key_fingerprint and fact.key_fingerprint != need.key_fingerprint:  # type: ignore[attr-defined]
            return (f"{need.url} holds key {fact.key_fingerprint or 'none'}, the lock pins "  # type: ignore
                    f"{need.key_fingerprint}")
    if isinstance(need, BaseNeed) and need.boot_mode and not same_boot_mode(fact.boot_mode, need.boot_mode):  # type: ignore
        return f"{fact.image_id} boots {fact.boot_mode}, the lock wants {need.boot_mode}"  # type: ignore
    return None


def fact_findings(needs: list[Need], facts: ResolvedFacts, now: datetime) -> list[FactFinding]:
    """Each need that is unresolved, recorded with a value the lock contradicts, or read over 90 days ago."""
    found = []
    for need in needs:
        section, fact = SECTION[type(need)], _recorded(need, facts)
        fix = f"run `gpufleet lock resolve --only {section}` with network access and commit the resolved file"
        if fact is None:
            found.append(FactFinding("unresolved", section, need.key, need.fields[0],
                                     f"not read from its source yet: {fix}"))
        elif (why := _difference(need, fact)) is not None:
            found.append(FactFinding("different", section, need.key, need.fields[0], f"{why}: {fix}"))
        elif fact.stale(now):
            found.append(FactFinding("stale", section, need.key, need.fields[0],
                                     f"read {fact.read_at.date().isoformat()}, over 90 days ago: {fix}"))
    return found
