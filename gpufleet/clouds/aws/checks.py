"""Checks only AWS stacks need: capacity blocks, subnets large enough for max size, and the operations options
(FSx for Lustre sizes, alarm target, idle scaling, budget notifications)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from components.clouds.aws.subnets import MAX_ZONES, PUBLIC_PREFIX_EXTRA, SPLIT_BITS

from ...stackfile.errors import SpecError
from ..network_fit import Split, size_problems
from .stack_model import KMS_KEY_ONLY_ARN

if TYPE_CHECKING:
    from ..backend import ResolvedCluster


def capacity_blocks_fixed(cluster: ResolvedCluster) -> Iterator[SpecError]:
    most = int(cluster.catalog.limit("aws", "capacity_block_max_instances"))
    for group in cluster.groups:
        if group.spec.capacity != "capacity-block":
            continue
        s = group.spec.size
        if not s.min == s.desired == s.max:
            yield SpecError(
                group.path("size"),
                f"a capacity block runs a fixed count: set min = desired = max (got {s.min}/{s.desired}/{s.max})",
            )
        if s.max > most:
            yield SpecError(group.path("size.max"), f"a capacity block holds at most {most} instances")


def brought_security_group(cluster: ResolvedCluster) -> Iterator[SpecError]:
    net = cluster.spec.network
    if net.security_group_id and net.admin_cidrs:
        yield SpecError(
            "network.admin_cidrs",
            "applies to the security group gpufleet creates; add the SSH rule to the brought security_group_id "
            "or leave admin_cidrs empty",
        )


def slurm_on_a_created_group(cluster: ResolvedCluster) -> Iterator[SpecError]:
    # The nodes' group admits slurmd from the head node's group and reaches its slurmctld and srun ports: rules
    # gpufleet writes into the group it creates (components/clouds/aws/security.py), not into a brought one.
    if cluster.spec.network.security_group_id and cluster.spec.scheduler.kind == "slurm":
        yield SpecError(
            "network.security_group_id",
            "scheduler slurm needs the nodes' group to admit slurmd (6818) from the head node and reach its slurmctld "
            "(6817) and srun ports, rules gpufleet adds only to the group it creates: leave security_group_id unset",
        )


def subnets_hold_nodes(cluster: ResolvedCluster) -> Iterator[SpecError]:
    """Only networks gpufleet creates can be sized offline; a brought subnet's size is unknown here."""
    cidr = cluster.spec.network.cidr
    if cidr is None:
        return
    zones = len(cluster.spec.network.zones)
    if zones > MAX_ZONES:  # the split's limit, not the network's size: a bigger network would not help
        yield SpecError("network.zones", f"{zones} zones, but a VPC gpufleet creates holds a private subnet for at "
                                         f"most {MAX_ZONES}; list at most {MAX_ZONES} zones")
        return
    split = Split("private and public subnets", "private subnet", SPLIT_BITS, 28 - SPLIT_BITS - PUBLIC_PREFIX_EXTRA,
                  int(cluster.catalog.limit("aws", "subnet_reserved_addresses")),
                  int(cluster.catalog.limits("aws").get("network_prefix_min") or 0))
    for problem in size_problems(split, cidr, cluster.addresses_at_max(), "node addresses at max size"):
        yield SpecError("network.cidr", problem)


def _numbers(text: int | str) -> list[int]:
    return [int(part) for part in str(text).split(",") if part]


def lustre_size_offered(cluster: ResolvedCluster) -> Iterator[SpecError]:
    """FSx for Lustre PERSISTENT_2 on SSD: 1200, 2400 GiB, then steps of 2400 GiB (catalog limits, sourced)."""
    shared = cluster.spec.storage.shared
    if shared is None:
        return
    first = _numbers(cluster.catalog.limit("aws", "fsx_lustre_first_sizes_gib"))
    step = int(cluster.catalog.limit("aws", "fsx_lustre_increment_gib"))
    gib = shared.capacity_gib
    if gib is None or not (gib in first or gib % step == 0):
        sizes = ", ".join(f"{size / 1000:g}" for size in first)
        yield SpecError(
            "storage.shared.capacity_tib",
            f"FSx for Lustre (PERSISTENT_2, SSD) takes {sizes} or a multiple of {step / 1000:g} TiB "
            f"({', '.join(map(str, first))} or n x {step} GiB), got {shared.capacity_tib:g}",
        )
    offered = _numbers(cluster.catalog.limit("aws", "fsx_lustre_throughputs_mb_per_tib"))
    if shared.throughput_mb_per_tib is not None and shared.throughput_mb_per_tib not in offered:
        yield SpecError(
            "storage.shared.throughput_mb_per_tib",
            f"FSx for Lustre PERSISTENT_2 offers {', '.join(map(str, offered))} MB/s per TiB, "
            f"got {shared.throughput_mb_per_tib}",
        )


def alarm_target_is_a_topic(cluster: ResolvedCluster) -> Iterator[SpecError]:
    alarms, region = cluster.spec.monitoring.alarms, cluster.spec.region
    if alarms is None or cluster.alarm_target_mode != "bring":
        return
    if not re.fullmatch(rf"arn:aws[a-z-]*:sns:{re.escape(region)}:\d{{12}}:[A-Za-z0-9_-]{{1,256}}", alarms.target):
        yield SpecError(
            "monitoring.alarms.target",
            f"{alarms.target!r} is not an SNS topic ARN in {region} (arn:aws:sns:{region}:ACCOUNT:NAME); "
            "CloudWatch alarms notify a topic of their own region. Or set create",
        )


def idle_on_scaling_groups(cluster: ResolvedCluster) -> Iterator[SpecError]:
    for group in cluster.groups:
        if group.spec.idle is not None and group.spec.provisioner == "fleet":
            yield SpecError(
                group.path("idle"),
                "an EC2 Fleet has no scaling policies (only Auto Scaling groups do): use provisioner: autoscaling "
                "for idle scale-down, or lower the fleet's target capacity yourself",
            )


def refresh_on_scaling_groups(cluster: ResolvedCluster) -> Iterator[SpecError]:
    for group in cluster.groups:
        if group.spec.instance_refresh == "rolling" and group.spec.provisioner == "fleet":
            yield SpecError(
                group.path("instance_refresh"),
                "an EC2 Fleet has no instance refresh (only Auto Scaling groups do): use provisioner: autoscaling, "
                "or none and replace the fleet's instances yourself",
            )


def s3_keys_in_region(cluster: ResolvedCluster) -> Iterator[SpecError]:
    """The node policy admits the keys through S3 of the stack's region only (kms:ViaService)."""
    region = cluster.spec.region
    for index, key in enumerate(cluster.spec.identity.s3_kms_keys):
        found = KMS_KEY_ONLY_ARN.match(key)
        if found and found["region"] != region:
            yield SpecError(
                f"identity.s3_kms_keys[{index}]",
                f"{key!r} is a key in {found['region']}; nodes read and write S3 in {region} and an SSE-KMS bucket's "
                f"key is in the bucket's region: give the key of a bucket in {region}",
            )


def s3_access_on_a_created_role(cluster: ResolvedCluster) -> Iterator[SpecError]:
    """The S3 grants are written into the role gpufleet creates; a brought instance profile would ignore them."""
    identity = cluster.spec.identity
    if not identity.instance_profile_arn:
        return
    for field in ("s3_read_prefixes", "s3_write_prefixes", "s3_kms_keys"):
        if getattr(identity, field):
            yield SpecError(
                f"identity.{field}",
                "granted on the node role gpufleet creates; with a brought instance_profile_arn grant it on that "
                "profile's role instead and leave this empty",
            )


def budget_notifications_fit(cluster: ResolvedCluster) -> Iterator[SpecError]:
    most = int(cluster.catalog.limit("aws", "budget_notifications_max"))
    percents = cluster.spec.budget.alert_at_percent
    if len(percents) > most:
        yield SpecError(
            "budget.alert_at_percent", f"an AWS budget holds at most {most} notifications, got {len(percents)}"
        )


CHECKS = (
    capacity_blocks_fixed,
    brought_security_group,
    slurm_on_a_created_group,
    subnets_hold_nodes,
    lustre_size_offered,
    alarm_target_is_a_topic,
    idle_on_scaling_groups,
    refresh_on_scaling_groups,
    budget_notifications_fit,
    s3_keys_in_region,
    s3_access_on_a_created_role,
)
