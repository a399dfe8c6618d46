"""Checks only Alibaba Cloud stacks need: vSwitch sizing, LowLatency deployment sets, ERIs only where the
provider can attach them, the brought security group, the operations options (alarm contact group, idle on
ESS groups), and groups whose types boot the boot mode of an image the lock keeps."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from components.clouds.alicloud.eri import eri_count
from components.clouds.alicloud.vswitches import MAX_ZONES, NAT_ADDRESSES, SMALLEST_PREFIX, SPLIT_BITS

from ...lock.boot_modes import spelled
from ...stackfile.errors import SpecError
from ..network_fit import Split, size_problems

if TYPE_CHECKING:
    from ..backend import ResolvedCluster, ResolvedGroup


def vswitches_hold_nodes(cluster: ResolvedCluster) -> Iterator[SpecError]:
    """Only networks gpufleet creates can be sized offline; a brought vSwitch's size is unknown here."""
    net = cluster.spec.network
    if net.cidr is None:
        return
    if len(net.zones) > MAX_ZONES:  # the split's limit, not the network's size: a bigger network would not help
        yield SpecError("network.zones", f"{len(net.zones)} zones, but a VPC gpufleet creates holds a vSwitch for at "
                                         f"most {MAX_ZONES}; list at most {MAX_ZONES} zones")
        return
    demand = cluster.addresses_at_max()
    demand[net.zones[0]] = demand.get(net.zones[0], 0) + NAT_ADDRESSES  # the NAT gateway sits in the first
    split = Split("vSwitches", "vSwitch", SPLIT_BITS, SMALLEST_PREFIX - SPLIT_BITS,
                  int(cluster.catalog.limit("alicloud", "subnet_reserved_addresses")),
                  int(cluster.catalog.limits("alicloud").get("network_prefix_min") or 0))
    for problem in size_problems(split, net.cidr, demand,
                                 "addresses (nodes at max size x addresses per node, ERIs included)"):
        yield SpecError("network.cidr", problem)


def low_latency_fits(cluster: ResolvedCluster) -> Iterator[SpecError]:
    """A LowLatency deployment set: one zone, at most 20 instances, no spot (catalog limit with its source)."""
    most = int(cluster.catalog.limit("alicloud", "deployment_set_low_latency_max_instances"))
    by_name = {g.name: g for g in cluster.groups}
    for index, name in enumerate(cluster.spec.low_latency_groups):
        field = f"low_latency_groups[{index}]"
        group = by_name.get(name)
        if group is None:
            yield SpecError(field, f"{name!r} is not a node group; use one of {sorted(by_name)}")
            continue
        if group.spec.spot:
            yield SpecError(group.path("capacity"), f"{group.spec.capacity}: a LowLatency deployment set cannot "
                            "hold spot (preemptible) instances; use on-demand or leave it out of low_latency_groups")
        if group.spec.size.max > most:
            yield SpecError(group.path("size.max"), f"a LowLatency deployment set holds at most {most} instances")
        if len(group.zones) != 1:
            yield SpecError(group.path("zone"), "a LowLatency deployment set lies in one zone: set the group's zone")
        if group.interfaces:
            yield SpecError(field, f"{name} uses ERIs, which only an ESS scaling configuration attaches, and "
                            "pulumi-alicloud's ScalingConfiguration takes no deployment set")


def eris_need_scaling_configuration(cluster: ResolvedCluster) -> Iterator[SpecError]:
    """An Auto Provisioning Group launches from a launch template, whose interfaces have no ERI traffic mode."""
    for group in cluster.groups:
        if group.spec.provisioner == "fleet" and group.primary is not None and eri_count(group.primary, group.rdma):
            yield SpecError(group.path("provisioner"), "fleet (Auto Provisioning Group) cannot attach ERIs: use "
                            "autoscaling for an eRDMA group, or rdma: off")


def fleet_priced(cluster: ResolvedCluster) -> Iterator[SpecError]:
    """An Auto Provisioning Group takes a maximum price per type (LaunchTemplateConfig.MaxPrice, required)."""
    for group in cluster.groups:
        if group.spec.provisioner == "fleet" and group.spec.spot_max_price is None:
            yield SpecError(group.path("spot_max_price"), "fleet (Auto Provisioning Group) needs a maximum price "
                            "per type: set spot_max_price, or use provisioner autoscaling")


def cost_optimised_fallbacks_alike(cluster: ResolvedCluster) -> Iterator[SpecError]:
    """A spot or mixed group is COST_OPTIMIZED (nodegroup.py), which launches its types in ascending vCPU unit price,
    not primary first (Auto Scaling "scaling policy" docs): a fallback with another GPU count may fill the group, and
    size counts nodes, not GPUs. Such fallbacks are refused (launch_template_overrides weighted_capacity would count
    capacity in weights, which the group's size and the node check do not)."""
    for group in cluster.groups:
        if not group.spec.spot or group.spec.provisioner != "autoscaling":
            continue
        known = group.known_types
        if not known:
            continue
        primary = known[0]
        for index, other in enumerate(group.types):
            if other is not None and other.gpu.count != primary.gpu.count:
                yield SpecError(
                    group.path(f"instance_types[{index}]"),
                    f"{other.name} has {other.gpu.count} GPUs, {primary.name} {primary.gpu.count}: a "
                    f"{group.spec.capacity} group launches its types cheapest vCPU first, not primary first, so any "
                    "of them may fill it; give fallbacks the primary's GPU count, or a group of their own",
                )


def brought_security_group(cluster: ResolvedCluster) -> Iterator[SpecError]:
    net = cluster.spec.network
    if net.security_group_id and net.admin_cidrs:
        yield SpecError("network.admin_cidrs", "applies to the security group gpufleet creates; add the SSH rule "
                        "to the brought security_group_id or leave admin_cidrs empty")


# CloudMonitor alarm contact group names (CreateAlarmContactGroup ContactGroupName): letters, digits, CJK
# characters, `.`, `_`, `-`; gpufleet's own are ASCII.
CONTACT_GROUP_NAME = r"[A-Za-z0-9._-]{1,64}"


def alarm_target_is_a_contact_group(cluster: ResolvedCluster) -> Iterator[SpecError]:
    alarms = cluster.spec.monitoring.alarms
    if alarms is None or cluster.alarm_target_mode != "bring":
        return
    if not re.fullmatch(CONTACT_GROUP_NAME, alarms.target):
        yield SpecError(
            "monitoring.alarms.target",
            f"{alarms.target!r} is not a CloudMonitor alarm contact group name (letters, digits, '.', '_', '-'; "
            "CloudMonitor alarms notify contact groups by name). Or set create",
        )


def idle_on_scaling_groups(cluster: ResolvedCluster) -> Iterator[SpecError]:
    for group in cluster.groups:
        if group.spec.idle is not None and group.spec.provisioner == "fleet":
            yield SpecError(
                group.path("idle"),
                "an Auto Provisioning Group takes no ESS alarm task (only scaling groups do): use provisioner: "
                "autoscaling for idle scale-down, or lower the group's target capacity yourself",
            )


def key_in_a_kms_instance(cluster: ResolvedCluster) -> Iterator[SpecError]:
    """A created key needs a KMS instance: CreateKey without DKMSInstanceId makes the region's default key, of which
    an account has one per region (KMS "Manage keys": "only one default key of the CMK type in each region"), so a
    second stack could not create it; and rotation periods other than default keys' fixed 365 days are for keys in
    an instance (pulumi-alicloud kms.Key rotation_interval)."""
    storage = cluster.spec.storage
    instance = getattr(storage, "dkms_instance_id", None)
    if storage.kms_key == "create" and instance is None:
        yield SpecError("storage.dkms_instance_id", "required with storage.kms_key: create: a key made outside a KMS "
                        "instance is the region's one default key, which a second stack cannot create; give the id "
                        "of your KMS instance (kst-...), or bring a key id in storage.kms_key")
    elif storage.kms_key != "create" and instance is not None:
        yield SpecError("storage.dkms_instance_id", "only with storage.kms_key: create (a brought key already lives "
                        "where it was made); remove it")


def groups_boot_the_image(cluster: ResolvedCluster) -> Iterator[SpecError]:
    """Each VM group boots the profile's image of a boot mode all its types boot (Alibaba's boot-mode table, the
    catalog's boot_modes): an image boots UEFI or Legacy BIOS, and a type that cannot boot it never starts. ACK node
    pools boot ACK's own node image, so they are not asked."""
    if cluster.spec.scheduler.kind == "kubernetes" or cluster.profile is None:
        return
    image_modes = [mode for mode in cluster.image_boot_modes() if mode is not None]
    if not image_modes:
        return  # no entry for the region (image_profile_known says so) or one image the lock records no mode of
    where = f"image profile {cluster.spec.image!r} in {cluster.spec.region}"
    for group in cluster.groups:
        if cluster.group_boot_mode(group) is None:
            yield from _unbootable(group, image_modes, where)


def _unbootable(group: ResolvedGroup, image_modes: list[str], where: str) -> Iterator[SpecError]:
    """The type that leaves the group no image to boot, named with its boot modes and the images'."""
    shared = set(image_modes)
    for index, row in enumerate(group.types):
        if row is None:
            continue  # an unknown type is the catalog check's
        field = group.path(f"instance_types[{index}]")
        if row.boot_modes is None:
            why = row.unconfirmed.get("boot_modes", "no source read lists it")
            yield SpecError(field, f"{row.name}: the catalog records no boot modes for it (gpufleet/catalog/data/"
                            f"alicloud.yaml: {why}), so whether it boots the {spelled(image_modes)} image of {where} "
                            "is unknown; cite its boot modes there, or use another type")
            return
        if not shared & set(row.boot_modes) and shared == set(image_modes):
            yield SpecError(field, f"{row.name} boots {spelled(row.boot_modes)} only, but {where} has images for "
                            f"{spelled(image_modes)} only, so it cannot boot them: bake an image of its boot mode "
                            "(images/lock.yaml base_images and the profile's images), or use a type of the images' "
                            "boot mode")
            return
        if not shared & set(row.boot_modes):
            kept = [mode for mode in image_modes if mode in shared]
            yield SpecError(field, f"{row.name} boots {spelled(row.boot_modes)} only, but the group's types before it "
                            f"boot {spelled(kept)} of the images of {where}: a group boots one image, so give it "
                            "types of one boot mode (or a group of its own)")
            return
        shared &= set(row.boot_modes)


CHECKS = (
    key_in_a_kms_instance, vswitches_hold_nodes, low_latency_fits,
    eris_need_scaling_configuration, fleet_priced, cost_optimised_fallbacks_alike, brought_security_group,
    alarm_target_is_a_contact_group, idle_on_scaling_groups, groups_boot_the_image,
)
