"""What a cloud is and can do, and what a stack resolves to on it: the protocol every cloud's backend implements
(its stack-file models and checks, capabilities, fabric facts, names) and ResolvedCluster, which gpufleet.resolve
makes once per stack. Resolve, the checks, the bootstrap and the commands read only these; building resources and
answering the offline engine is the cloud's program (gpufleet.clouds.program). Both sit in one module, below the
checks that read them and resolve that runs the checks, so the import graph has no circle, type-only ones
included."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from ipaddress import IPv4Network
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, Protocol

from ..lock.boot_modes import BootMode, common_boot_mode
from .naming import fit

if TYPE_CHECKING:  # the stack models only name types here: `quote` reads backends without building them
    from ..catalog import Catalog, InstanceType, SystemType
    from ..lock.model import ImageEntry, Lock, Profile
    from ..stackfile.errors import SpecError
    from ..stackfile.models import ClusterSpec, ImagesSpec, NodeGroup

    ClusterCheck = Callable[["ResolvedCluster"], Iterator[SpecError]]  # defined below


@dataclass(frozen=True)
class FabricGroup:
    """The one group an RDMA fabric reaches across (an InfiniBand scale set, a LowLatency deployment set), capped
    by a published limit of the catalog."""

    kind: str
    """What the group is, for messages."""
    limit: str
    """Name of the catalog limit (`limits:` in catalog/data/C.yaml) giving the most nodes one group holds."""
    takes_spot: bool
    """Whether spot nodes may be in the group."""


@dataclass(frozen=True)
class StackModels:
    """A cloud's stack-file models and checks, which its backend builds on first use (BackendDefaults.spec_model):
    pydantic builds a model's validator when its class is made, and `quote`, or a plan of another cloud, needs
    none of them."""

    cluster: type[ClusterSpec]
    images: type[ImagesSpec]
    checks: Sequence[ClusterCheck]


class CloudBackend(Protocol):
    """What a cloud supplies: its stack-file model and checks, fabric facts, components and offline answers."""

    name: str
    """The `cloud` value of a stack file: aws, azure, alicloud."""
    provider: str
    """Prefix of the provider's resource type tokens (aws, azure-native, alicloud)."""
    region_key: str
    """The provider's own config key for the region (aws:region, azure-native:location, alicloud:region)."""
    spec_model: type[ClusterSpec]
    """The cloud's `gpufleet:cluster` model: network, identity and storage settings only it has."""
    images_model: type[ImagesSpec]
    """The cloud's `gpufleet:images` model: the settings its image pipeline takes (build machine, key)."""
    checks: Sequence[ClusterCheck]
    """Cross-field checks only this cloud needs, run after the shared ones, before any resource."""
    capacities: frozenset[str]
    """The node group `capacity` kinds the cloud offers."""
    operations: frozenset[str]
    """The operations options built for the cloud (monitoring, idle, alarm_emails, budget_alerts, shared_storage);
    a stack setting another one stops before any resource."""
    operation_gaps: Mapping[str, str]
    """Why each option not in `operations` cannot be built on this cloud (the provider or service lacks it), by
    option; the refusal says so. Every option is in exactly one of the two."""
    node_completes_hooks: bool
    """Whether a node completes its scaling group's lifecycle hooks itself (the bootstrap's node scripts do so with
    the cloud's CLI); False where the cloud gives the action token only to a notification target (Alibaba ESS: a
    runbook completes it) or holds no hook."""

    def interfaces_in_use(self, instance: InstanceType, rdma: bool) -> int:
        """RDMA interfaces (EFA, IB HCAs, ERIs) a node of this type uses; 0 without RDMA."""
        ...

    def addresses_per_node(self, instance: InstanceType, rdma: bool) -> int:
        """Private addresses one node takes from its subnet."""
        ...

    def zone_pattern(self, region: str) -> str | None:
        """Regular expression every zone name of `region` matches; None where the stack model fixes zones."""
        ...

    def group_names(self, spec: ClusterSpec, group_name: str) -> Mapping[str, str]:
        """Names a group's resources must have before they exist (scaling group, hooks), by role."""
        ...

    def fabric_group(self, instance: InstanceType) -> FabricGroup | None:
        """The capped group nodes of this type must share to reach each other at fabric speed; None where the
        cloud publishes no such cap (an EFA placement group)."""
        ...

    def default_zone(self, region: str) -> str | None:
        """A zone every account has in `region`, for forks into a region no stack uses yet; None where zone
        names do not follow from the region."""
        ...

    def zone_name_lookup(self, region: str, zone_id: str) -> str | None:
        """A shell command printing the name zone `zone_id` of `region` has in the account signed in, where the
        catalog prices a zone by an ID and the stack names zones per account; None where no price is per zone."""
        ...


class BackendDefaults:
    """What the clouds share; a backend overrides what differs and supplies the rest of CloudBackend."""

    name: str
    scaling_group_name_max: int | None
    """The cloud's limit on a scaling group's name (its names table); None: no cut."""
    operation_gaps: Mapping[str, str] = MappingProxyType({})
    node_completes_hooks = False

    stack_models: Callable[[], StackModels]
    """The cloud's models and checks, imported when called so that importing the backend builds none of them."""

    @cached_property
    def _stack_models(self) -> StackModels:
        return self.stack_models()

    @property
    def spec_model(self) -> type[ClusterSpec]:
        return self._stack_models.cluster

    @property
    def images_model(self) -> type[ImagesSpec]:
        return self._stack_models.images

    @property
    def checks(self) -> Sequence[ClusterCheck]:
        return self._stack_models.checks

    def interfaces_in_use(self, instance: InstanceType, rdma: bool) -> int:
        return instance.fabric.interfaces if rdma else 0

    def zone_pattern(self, region: str) -> str | None:
        return None

    def fabric_group(self, instance: InstanceType) -> FabricGroup | None:
        return None

    def default_zone(self, region: str) -> str | None:
        return None

    def zone_name_lookup(self, region: str, zone_id: str) -> str | None:
        return None

    def priced_type(self, spec: ClusterSpec, group: NodeGroup,
                    types: tuple[InstanceType | None, ...]) -> InstanceType | None:
        """The type a group's cost is computed at: its primary, which the scaling service launches first."""
        return types[0]

    def group_names(self, spec: ClusterSpec, group_name: str) -> Mapping[str, str]:
        """`gpufleet-<cluster>-<environment>-<group>`, cut to the cloud's limit: known before the group exists, so
        policies can name it."""
        base = f"gpufleet-{spec.name}-{spec.environment}-{group_name}"
        return {"scaling_group": fit(base, self.scaling_group_name_max)}


@dataclass(frozen=True)
class GroupCost:
    """USD per hour of a group at the type its cloud prices it at (its primary; on Alibaba Cloud cost-optimised
    groups, the most expensive: CloudBackend.priced_type) (catalog.pricing.hourly_cost): the stack's price for the
    type when `prices` gives one, else the catalog snapshot."""

    desired_on_demand: float
    desired_expected: float
    """Desired size with its spot nodes at the spot price (on-demand where none is given)."""
    max_on_demand: float
    """What the budget is checked against: size.max at the group's most expensive type (catalog.most_expensive)."""


@dataclass(frozen=True)
class FabricInUse:
    """The RDMA fabric a node of one instance type uses in its group, as the cloud's backend counts it."""

    kind: str
    """efa, infiniband, erdma, roce; none without RDMA (or on a type without interfaces)."""
    interfaces: int
    """RDMA interfaces (EFA, IB HCAs, ERIs) the node must show; 0 with kind none."""


NO_FABRIC = FabricInUse("none", 0)


@dataclass(frozen=True)
class ResolvedGroup:
    """One node group with what the catalog, the fabric and the cloud's naming make of it."""

    index: int
    spec: NodeGroup
    types: tuple[InstanceType | None, ...]
    """Catalog row of each of spec.instance_types, in order; None for a type the catalog lacks."""
    rdma: bool
    """RDMA in use: required, or auto on a primary type with a fabric."""
    fabrics: tuple[FabricInUse, ...]
    """The fabric a node of each of spec.instance_types uses, in order (none for a type the catalog lacks)."""
    zones: tuple[str, ...]
    names: Mapping[str, str]
    """Names the group's resources need before they exist (e.g. scaling_group), by role."""
    cost: GroupCost | None
    """None when the primary type is unknown or has no on-demand price in the region: unknown, not 0."""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def primary(self) -> InstanceType | None:
        return self.types[0]

    @property
    def fabric(self) -> str:
        """Fabric kind the primary type uses (efa, infiniband, erdma, roce) or none."""
        return self.fabrics[0].kind

    @property
    def interfaces(self) -> int:
        """RDMA interfaces per node of the primary type in use (0 without RDMA)."""
        return self.fabrics[0].interfaces

    @property
    def known_types(self) -> list[InstanceType]:
        return [t for t in self.types if t is not None]

    def path(self, field: str) -> str:
        """Field path of a field of this group in the stack file, e.g. node_groups[1].size."""
        return f"node_groups[{self.index}].{field}"


@dataclass(frozen=True)
class ResolvedCluster:
    spec: ClusterSpec
    groups: tuple[ResolvedGroup, ...]
    catalog: Catalog
    lock: Lock
    backend: CloudBackend
    """The stack's cloud (gpufleet.clouds.lookup.backend(spec.cloud)), given by resolve."""

    @property
    def system_type(self) -> tuple[str, SystemType] | None:
        """A Kubernetes cluster's system group type, named or the catalog's default for the cloud, with its row; None
        for a VM cluster (and for a type the catalog lacks, which the checks refuse)."""
        if self.spec.scheduler.kind != "kubernetes":
            return None
        return self.catalog.system_type(self.spec.cloud, self.spec.scheduler.system_group.instance_type)

    @property
    def head_node_type(self) -> tuple[str, SystemType | None] | None:
        """A Slurm cluster's head node type with its catalog row: the stack's type (its row None where the catalog
        lacks it, so it stays unpriced), or the cloud's default CPU type (system_types); None when not slurm or the
        catalog has no default (the checks refuse that)."""
        if self.spec.scheduler.kind != "slurm":
            return None
        head = self.spec.scheduler.head_node
        if head is not None and head.instance_type is not None:
            found = self.catalog.system_type(self.spec.cloud, head.instance_type)
            return head.instance_type, found[1] if found else None
        return self.catalog.system_type(self.spec.cloud, None)

    @property
    def head_node_zone(self) -> str | None:
        """The zone a Slurm cluster's head node runs in: scheduler.head_node.zone, else the first of network.zones;
        None without a head node or without zones (a regional network)."""
        if self.spec.scheduler.kind != "slurm":
            return None
        head, zones = self.spec.scheduler.head_node, self.spec.network.zones
        return (head.zone if head is not None else None) or (zones[0] if zones else None)

    @property
    def profile(self) -> Profile | None:
        """The lock's profile the stack names (spec.image); None only for a stack the checks refuse."""
        return self.lock.profiles.get(self.spec.image)

    @property
    def image(self) -> ImageEntry | None:
        """The lock's image of that profile for the stack's cloud and region, baked (an id) or not (id null, with
        the stack that bakes it); None only for a stack the checks refuse. Where the lock keeps an image per boot
        mode, the one a group boots that is not baked yet, else the first group's (whether the cluster can boot)."""
        booted = [entry for group in self.groups if (entry := self.group_image(group)) is not None]
        if booted:
            return next((entry for entry in booted if entry.id is None), booted[0])
        return self.lock.image_entry(self.spec.image, self.spec.cloud, self.spec.region)

    def image_boot_modes(self) -> list[BootMode | None]:
        """The boot modes the lock keeps an image of the profile for in the region ([None]: one image, no mode)."""
        return list(self.lock.image_entries(self.spec.image, self.spec.cloud, self.spec.region))

    def group_boot_mode(self, group: ResolvedGroup) -> BootMode | None:
        """The boot mode of the image the group boots: one every type of it boots and the lock has an image for,
        UEFI first; None where the lock keeps one image (no boot mode) or where none fits (the checks refuse it)."""
        modes = [mode for mode in self.image_boot_modes() if mode is not None]
        if not modes or any(t is None or t.boot_modes is None for t in group.types):
            return None
        return common_boot_mode((t.boot_modes for t in group.known_types), modes)

    def group_image(self, group: ResolvedGroup) -> ImageEntry | None:
        """The lock's image the group boots (see group_boot_mode); None where it has none for the group."""
        entries = self.lock.image_entries(self.spec.image, self.spec.cloud, self.spec.region)
        if None in entries:
            return entries[None]
        mode = self.group_boot_mode(group)
        return entries.get(mode) if mode is not None else None

    @property
    def alarm_target_mode(self) -> Literal["create", "bring"] | None:
        """How alarms and budget alerts reach people: "bring" when monitoring.alarms.target names the cloud's
        notification target, "create" when alarms or budget alerts need one and none is brought (the stack's own
        topic / action group / contact group, with the alarm emails as recipients), None when nothing notifies."""
        alarms = self.spec.monitoring.alarms
        if alarms is not None and alarms.target != "create":
            return "bring"
        if alarms is not None or self.spec.budget.alert_at_percent:
            return "create"
        return None

    def addresses_at_max(self, per_zone: bool = True) -> dict[str, int]:
        """Private addresses the node groups take at max size, per zone ("" for a regional group): a group
        over several zones may land every node in one of them, so each of its zones counts all of them. With
        per_zone False, one total under "" (one subnet serves every zone)."""
        demand: dict[str, int] = {}
        for group in self.groups:
            if group.primary is None:
                continue
            per_node = self.backend.addresses_per_node(group.primary, group.rdma)
            for zone in (group.zones or ("",)) if per_zone else ("",):
                demand[zone] = demand.get(zone, 0) + group.spec.size.max * per_node
        return demand

    def usable_addresses(self, subnet: IPv4Network) -> int:
        """Addresses of a subnet left for nodes once the cloud's reserved ones are taken (catalog limit)."""
        return subnet.num_addresses - int(self.catalog.limit(self.spec.cloud, "subnet_reserved_addresses"))
