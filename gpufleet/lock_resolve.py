"""`gpufleet lock resolve`: read every fact the lock needs from its source and record it beside the lock.

The needs come from the lock (gpufleet.lock.needs) and, for managed versions, from the stacks that run a managed
Kubernetes service. Each is read by its source reader (gpufleet.sources.*); a failure is kept with the need's field
and the others are still read, so one run names every problem. Facts not read this run (--only, --profile) keep their
recorded values. A download whose bytes differ from an earlier read fails: a versioned file must never change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .lock.facts import PublishedChecksum, ResolvedFacts, resolved_path
from .lock.needs import (
    RECORD,
    SECTION,
    AptNeed,
    BaseNeed,
    DownloadNeed,
    ImageNeed,
    ManagedNeed,
    Need,
    lock_needs,
    managed_key,
    managed_needs,
    profile_needs,
)
from .sources.http import SourceError

SECTIONS = tuple(RECORD)
# A run's record as it grows: kind (--only's name) -> key -> fact; a reader sees what earlier reads of the run found.
Sections = dict[str, dict[str, Any]]
# The lowest add-on versions the program needs: vpc-cni v1.18.5 for the launch templates' efa-only interfaces (EKS user
# guide ml/node-efa.adoc, as gpufleet/catalog/eks_addons.yaml notes).
EKS_ADDON_FLOORS = {"vpc-cni": "v1.18.5"}


@dataclass
class ResolveRun:
    """What a run read, what failed (field -> why) and which recorded facts moved (key -> old -> new)."""

    facts: ResolvedFacts
    failed: dict[str, str] = field(default_factory=dict)
    moved: dict[str, str] = field(default_factory=dict)
    read: int = 0


def stack_managed_needs(stacks: Mapping[str, Mapping[str, Any]]) -> list[Need]:
    """The managed versions the stacks' Kubernetes clusters take: EKS and ACK add-ons per minor, ACK's and AKS's full
    version, read in the stack's region."""
    from .catalog.managed_addons import AckAddons, EksAddons

    services = {"aws": ("eks", EksAddons.NAMES, False), "alicloud": ("ack", AckAddons.NAMES, True),
                "azure": ("aks", (), True)}
    needs: dict[str, Need] = {}
    for config in stacks.values():
        cluster = config.get("gpufleet:cluster")
        scheduler = (cluster or {}).get("scheduler") if isinstance(cluster, dict) else None
        if not isinstance(scheduler, dict) or scheduler.get("kind") != "kubernetes" or not scheduler.get("version"):
            continue
        service, names, with_version = services[cluster["cloud"]]
        for need in managed_needs(service, str(scheduler["version"]), names, cluster.get("region"), with_version):
            needs.setdefault(need.key, need)
    return list(needs.values())


def selected_needs(lock_path: Path, stacks: Mapping[str, Mapping[str, Any]], only: set[str] | None,
                   profile: str | None) -> list[Need]:
    from .lock import load_lock

    lock = load_lock(lock_path)
    if profile is not None:
        needs = profile_needs(lock.profiles[profile])
    else:
        needs = lock_needs(lock) + stack_managed_needs(stacks)
    return [need for need in needs if only is None or SECTION[type(need)] in only]


def _read_apt(need: AptNeed, now: datetime, read: Sections) -> Any:
    from .sources.apt import keyring_from_deb, resolve_apt_repository
    from .sources.http import get

    if need.keyring_deb:
        try:
            keyring = keyring_from_deb(get(need.keyring_deb).body)
        except SourceError as unreadable:
            raise SourceError(f"{need.keyring_deb}: {unreadable}") from None
    elif need.key_url:
        keyring = get(need.key_url).body
    else:
        raise SourceError(f"{need.url}: the lock names no key for this repository")
    if need.fingerprint is None:
        raise SourceError(f"{need.key_url or need.keyring_deb}: the lock pins no key fingerprint, so the repository "
                          "cannot be verified; pin the vendor's fingerprint first")
    # One read per set of distinct names (two profiles may pin two versions of one package); the entries join.
    batches: list[dict[str, str]] = []
    for name, version in need.packages:
        batch = next((b for b in batches if name not in b), None)
        if batch is None:
            batches.append(batch := {})
        batch[name] = version
    facts = [resolve_apt_repository(need.url, need.suite, batch, keyring, need.fingerprint,
                                    component=need.component, now=now)
             for batch in batches or [{}]]
    return facts[0].model_copy(update={"packages": {k: v for fact in facts for k, v in fact.packages.items()}})


def _read_download(need: DownloadNeed, now: datetime, read: Sections) -> Any:
    if need.release is not None:
        from .sources.github_releases import resolve_release_asset

        fact = resolve_release_asset(need.url, need.release, now=now)
    else:
        from .sources.downloads import resolve_download

        fact = resolve_download(need.url, need.sha256, need.key_fingerprint, now=now,
                                wheel_requires_pinned=need.wheel_requires)
    before = read["downloads"].get(need.key)
    if before is not None and before.sha256 != fact.sha256:
        raise SourceError(f"{need.url}: its bytes hash to {fact.sha256}, recorded {before.read_at.date()} as "
                          f"{before.sha256}: a versioned file changed at its source; remove its record only once "
                          "you know why")
    if need.sha256 and need.release is None:
        fact = fact.model_copy(update={"published": PublishedChecksum(
            sha256=need.sha256, source=f"images/lock.yaml {need.fields[0]} (its profile's sources:)")})
    return fact


def _read_image(need: ImageNeed, now: datetime, read: Sections) -> Any:
    from .sources.registry import resolve_image

    return resolve_image(need.reference, need.platforms, now=now)


def _read_managed(need: ManagedNeed, now: datetime, read: Sections) -> Any:
    if need.service == "eks" and need.parameter:
        from .sources import aws

        return aws.ssm_release_version(aws.default_ssm_client(need.region or "us-east-1"), need.parameter, now=now)
    if need.service == "eks":
        from .sources import aws

        eks = aws.default_eks_client(need.region or "us-east-1")
        return aws.eks_addon_versions(eks, need.minor, [need.name], EKS_ADDON_FLOORS, now=now)[need.name]
    if need.service == "ack":
        from .sources import alicloud

        cs = alicloud.default_cs_client(need.region or "cn-beijing")
        # The cluster version this run read already (managed_needs lists it first), else read it now.
        version = read["addons"].get(managed_key("ack", need.minor))
        if version is None or version.read_at != now:
            version = alicloud.ack_kubernetes_version(cs, need.region or "cn-beijing", need.minor, now=now)
        if need.name is None:
            return version
        return alicloud.ack_addon_versions(cs, need.region or "cn-beijing", version.version, [need.name],
                                           now=now)[need.name]
    from .sources import azure

    return azure.aks_kubernetes_version(azure.default_containerservice_client(), need.region or "eastus",
                                        need.minor, now=now)


def _read_base(need: BaseNeed, now: datetime, read: Sections) -> Any:
    if need.cloud == "aws":
        from .sources import aws

        return aws.ssm_base_image(aws.default_ssm_client(need.region), aws.default_ec2_client(need.region),
                                  need.reference, now=now)
    if need.cloud == "azure":
        from .sources import azure

        return azure.azure_marketplace_image(azure.default_compute_client(), need.region, need.reference, now=now)
    from .sources import alicloud

    # Alibaba's DescribeImages says BootMode UEFI or BIOS; the lock's intent is uefi or bios.
    return alicloud.alicloud_base_image(alicloud.default_ecs_client(need.region), need.region, need.reference,
                                        need.boot_mode.upper() if need.boot_mode else None, now=now)


READERS: dict[type, Callable[[Any, datetime, Sections], Any]] = {
    AptNeed: _read_apt, DownloadNeed: _read_download, ImageNeed: _read_image, ManagedNeed: _read_managed,
    BaseNeed: _read_base,
}


def _section(facts: ResolvedFacts, section: str) -> dict[str, Any]:
    return getattr(facts, RECORD[section])


def _value(fact: Any) -> Any:
    """What a fact says, without when it was read: two reads of an unchanged source compare equal."""
    return fact.model_dump(exclude={"read_at"}, mode="json")


def resolve(needs: list[Need], previous: ResolvedFacts, now: datetime | None = None) -> ResolveRun:
    """Read each need; the facts are the previous record with every successful read replacing its entry."""
    now = now or datetime.now(timezone.utc)
    sections = {name: dict(_section(previous, name)) for name in SECTIONS}
    run = ResolveRun(previous)
    for need in needs:
        section = SECTION[type(need)]
        try:
            fact = READERS[type(need)](need, now, sections)
        except SourceError as failed:
            run.failed[need.fields[0]] = str(failed)
            continue
        run.read += 1
        before = sections[section].get(need.key)
        if before is None or _value(before) != _value(fact):
            run.moved[f"{section}: {need.key}"] = "first read" if before is None else "changed at its source"
        sections[section][need.key] = fact
    run.facts = ResolvedFacts(**{RECORD[name]: entries for name, entries in sections.items()})
    return run


def write_facts(lock_path: Path, facts: ResolvedFacts) -> Path:
    """Write the resolved file beside the lock, keys sorted, so a re-read that changed nothing changes no byte."""
    from ruamel.yaml import YAML

    path = resolved_path(lock_path)
    data = facts.model_dump(by_alias=True, mode="json", exclude_none=True)
    data = {key: dict(sorted(value.items())) if isinstance(value, dict) else value for key, value in data.items()}
    yaml = YAML()
    yaml.width = 4096
    with path.open("w") as out:
        out.write("# Written by `gpufleet lock resolve`: what each source answered, where and when. Do not edit by "
                  "hand;\n# `gpufleet plan` and `images check` read it, `lock resolve --check` says when a source "
                  "moved.\n")
        yaml.dump(data, out)
    return path
