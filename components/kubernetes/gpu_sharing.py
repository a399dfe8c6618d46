"""A node group's GPU sharing, as the NVIDIA device plugin and the GPU Operator's MIG manager read it.

The device plugin takes a versioned config file (NVIDIA/k8s-device-plugin api/config/v1 @1b826ac: `version: v1`,
`flags.migStrategy` none | single | mixed, `sharing.timeSlicing.resources[{name, replicas}]`, replicas >= 2), one
per node: its chart keeps several in one ConfigMap and each node picks its own by the label
`nvidia.com/device-plugin.config=<name>`, the rest getting the default (README, "Updating Per-Node Configuration
With a Node Label"). So each time-slicing group gets a config named after it and the label on its nodes, MIG nodes
the config of their layout's strategy (below); whole-GPU groups get neither and use the default.

MIG: the nodes partition their GPUs at boot, before the node check (components/bootstrap/mig.py), so the plugin
finds the devices from its first start. The label `nvidia.com/mig.config=<mig-parted config>` is the one the GPU
Operator's MIG manager applies (its default configs are mig-parted's, the names gpu_sharing.mig_profile takes): where
a cluster runs it, it finds the layout already applied. migStrategy follows the layout: `single` where the profile
makes one kind of device (each advertised as nvidia.com/gpu), `mixed` where it makes several
(nvidia.com/mig-<profile> each) (README, MIG_STRATEGY). The strategy belongs to the node, not the group: a node keeps
the layout and the labels it booted with until it is replaced (the join registers them once; instance_refresh none),
so a group's config that followed a new profile would flip its older nodes from mixed to single over a layout that
single cannot serve. Neither drained nor refused: a MIG node's label names the config of its own layout's strategy,
`mig-single` or `mig-mixed`, and the ConfigMap always holds both, so an older node keeps the config its layout
needs (a label naming a config the ConfigMap lacks stops the plugin's config manager: NVIDIA/k8s-device-plugin
cmd/config-manager/main.go@1b826ac updateConfigName, "specified config %v does not exist").

Time-slicing: every GPU advertised `replicas` times under nvidia.com/gpu, with failRequestsGreaterThanOne, which the
README recommends: a pod asking for 2 of a shared GPU would get one GPU twice, not two.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import yaml

from gpufleet.catalog import load_catalog, load_mig_facts
from gpufleet.yaml_libyaml import SAFE_DUMPER

MIG_CONFIG_LABEL = "nvidia.com/mig.config"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
GPU_RESOURCE = "nvidia.com/gpu"
CONFIG_VERSION = "v1"
# The ConfigMap key of the config nodes without the label get; the chart takes a config named `default` as the
# default (README). Group configs are named `group-<name>`, so no group name can take it.
DEFAULT_CONFIG_NAME = "default"
DEFAULT_CONFIG: Mapping[str, Any] = {"version": CONFIG_VERSION, "flags": {"migStrategy": "none"}}
# The MIG strategies a node's layout may need (README, MIG_STRATEGY), each a config of its own.
MIG_STRATEGIES = ("single", "mixed")


class SharingGroup(Protocol):
    """The fields of components.kubernetes.InClusterGroup this module reads."""

    @property
    def name(self) -> str: ...
    @property
    def instance_types(self) -> tuple[str, ...]: ...
    @property
    def gpus_per_node(self) -> int: ...
    @property
    def sharing_mode(self) -> str: ...
    @property
    def mig_profile(self) -> str | None: ...
    @property
    def time_slicing_replicas(self) -> int | None: ...


@dataclass(frozen=True)
class GroupSharing:
    """A cloud's node group as this module reads it, before an InClusterGroup exists (the nodes' labels)."""

    name: str
    instance_types: tuple[str, ...]
    gpus_per_node: int
    sharing_mode: str
    mig_profile: str | None
    time_slicing_replicas: int | None


class SharingError(ValueError):
    """A group whose sharing settings the stack checks should have refused; the message names the group."""


def config_name(group: SharingGroup) -> str:
    """The device plugin config of the group's nodes: its ConfigMap key and their label value."""
    if group.sharing_mode == "mig":
        return mig_config_name(mig_strategy(group))
    return f"group-{group.name}"


def mig_config_name(strategy: str) -> str:
    return f"mig-{strategy}"


def mig_config(strategy: str) -> dict[str, Any]:
    return {"version": CONFIG_VERSION, "flags": {"migStrategy": strategy}}


def device_plugin_config(group: SharingGroup) -> dict[str, Any] | None:
    """The device plugin config file content for the group's sharing mode; None for whole GPUs (the default)."""
    mode = group.sharing_mode
    if mode == "none":
        return None
    if mode == "mig":
        return mig_config(mig_strategy(group))
    if mode == "time-slicing":
        replicas = group.time_slicing_replicas
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 2:
            raise SharingError(f"node group {group.name}: time-slicing needs replicas >= 2, got {replicas!r}")
        return {
            "version": CONFIG_VERSION,
            "flags": {"migStrategy": "none"},
            "sharing": {"timeSlicing": {
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": GPU_RESOURCE, "replicas": replicas}],
            }},
        }
    raise SharingError(f"node group {group.name}: unknown sharing mode {mode!r}; none, mig or time-slicing")


def mig_strategy(group: SharingGroup) -> str:
    """single or mixed, from the MIG devices the group's profile makes."""
    strategy = load_mig_facts().strategy(group.mig_profile or "")
    if strategy is None:
        raise SharingError(f"node group {group.name}: {group.mig_profile!r} is no MIG profile of any GPU")
    return strategy


def sharing_labels(group: SharingGroup) -> dict[str, str]:
    """The labels the group's nodes carry for its sharing (none for whole GPUs)."""
    if group.sharing_mode == "none":
        return {}
    labels = {DEVICE_PLUGIN_CONFIG_LABEL: config_name(group)}
    if group.sharing_mode == "mig":
        labels[MIG_CONFIG_LABEL] = str(group.mig_profile)
    return labels


def config_map_data(groups: Iterable[SharingGroup]) -> dict[str, str]:
    """The device plugin ConfigMap's data: the default config, both MIG strategies' (whatever the groups use now:
    older nodes may need either) and one per time-slicing group, as YAML files."""
    configs: dict[str, Any] = {DEFAULT_CONFIG_NAME: dict(DEFAULT_CONFIG)}
    configs.update({mig_config_name(strategy): mig_config(strategy) for strategy in MIG_STRATEGIES})
    for group in groups:
        config = device_plugin_config(group)
        if config is not None:
            configs[config_name(group)] = config
    return {name: yaml.dump(config, Dumper=SAFE_DUMPER, sort_keys=False) for name, config in configs.items()}


def advertised_resources(group: SharingGroup) -> dict[str, int]:
    """What one node of the group advertises, for node templates that scale from zero: GPUs, time-sliced GPUs x
    replicas, or MIG devices (nvidia.com/gpu with strategy single, nvidia.com/mig-<profile> with mixed)."""
    gpus = group.gpus_per_node
    if group.sharing_mode == "time-slicing":
        return {GPU_RESOURCE: gpus * int(group.time_slicing_replicas or 0)}
    if group.sharing_mode != "mig":
        return {GPU_RESOURCE: gpus}
    row = next((r for r in load_catalog().instances() if r.name == group.instance_types[0]), None)
    facts = load_mig_facts().of(row.gpu) if row else None
    devices = facts.devices(group.mig_profile or "") if facts else None
    if not devices:
        raise SharingError(f"node group {group.name}: {group.instance_types[0]} offers no {group.mig_profile!r}")
    if mig_strategy(group) == "single":
        return {GPU_RESOURCE: gpus * sum(devices.values())}
    return {f"nvidia.com/mig-{profile}": gpus * count for profile, count in devices.items()}
