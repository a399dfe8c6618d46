"""What a cloud is and can do: the protocol every cloud's backend implements (its stack-file models and checks,
capabilities, fabric facts, names). Resolve, the checks, the bootstrap and the commands read only this; building
resources and answering the offline engine is the cloud's program (gpufleet.clouds.program)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol

from ..stackfile.models import ClusterSpec, ImagesSpec, NodeGroup
from .naming import fit

if TYPE_CHECKING:
    from ..catalog import InstanceType
    from ..resolve import ResolvedCluster
    from ..stackfile.errors import SpecError

    ClusterCheck = Callable[[ResolvedCluster], Iterator[SpecError]]


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


class BackendDefaults:
    """What the clouds share; a backend overrides what differs and supplies the rest of CloudBackend."""

    name: str
    scaling_group_name_max: int | None
    """The cloud's limit on a scaling group's name (its names table); None: no cut."""
    operation_gaps: Mapping[str, str] = MappingProxyType({})
    node_completes_hooks = False

    def interfaces_in_use(self, instance: InstanceType, rdma: bool) -> int:
        return instance.fabric.interfaces if rdma else 0

    def zone_pattern(self, region: str) -> str | None:
        return None

    def fabric_group(self, instance: InstanceType) -> FabricGroup | None:
        return None

    def default_zone(self, region: str) -> str | None:
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
