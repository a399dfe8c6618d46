"""The NVIDIA device plugin config and node labels of a node group's GPU sharing. The configs are checked against
the rules the plugin's own parser applies (NVIDIA/k8s-device-plugin api/config/v1 @1b826ac: config.go version v1,
consts.go MIG strategies, replicas.go: resources required, each with a name and replicas >= 2)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import libyaml_files
import pytest
import yaml

from components.kubernetes.gpu_sharing import (
    DEFAULT_CONFIG_NAME,
    DEVICE_PLUGIN_CONFIG_LABEL,
    MIG_CONFIG_LABEL,
    SharingError,
    advertised_resources,
    config_map_data,
    config_name,
    device_plugin_config,
    sharing_labels,
)
from gpufleet.stackfile.gpu_sharing import GpuSharing


@dataclass(frozen=True)
class Group:
    """The fields of InClusterGroup the module reads."""

    name: str = "infer"
    instance_types: tuple[str, ...] = ("p5.48xlarge",)
    gpus_per_node: int = 8
    sharing_mode: str = "none"
    mig_profile: str | None = None
    time_slicing_replicas: int | None = None


def _plugin_accepts(config: dict) -> None:
    """What the device plugin's config parser requires of a config file."""
    assert config["version"] == "v1"
    assert config["flags"]["migStrategy"] in ("none", "single", "mixed")
    time_slicing = config.get("sharing", {}).get("timeSlicing")
    if time_slicing is not None:
        assert time_slicing["resources"], "no resources specified"
        for resource in time_slicing["resources"]:
            assert resource["name"].startswith("nvidia.com/") and resource["replicas"] >= 2
        assert time_slicing.get("renameByDefault", False) is False, "pods ask for nvidia.com/gpu, not .shared"


# Label values and ConfigMap keys as Kubernetes validates them (IsValidLabelValue, IsConfigMapKey).
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
CONFIG_MAP_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


def test_whole_gpus_use_the_default_config_and_no_labels():
    assert device_plugin_config(Group()) is None
    assert sharing_labels(Group()) == {}
    assert advertised_resources(Group()) == {"nvidia.com/gpu": 8}


@pytest.mark.parametrize(("profile", "strategy"), [("all-1g.10gb", "single"), ("all-3g.40gb", "single"),
                                                    ("all-balanced", "mixed")])
def test_mig_strategy_follows_the_profiles_devices(profile, strategy):
    config = device_plugin_config(Group(sharing_mode="mig", mig_profile=profile))
    _plugin_accepts(config)
    assert config == {"version": "v1", "flags": {"migStrategy": strategy}}
    assert "sharing" not in config


def test_mig_nodes_carry_the_mig_manager_label_and_their_config():
    labels = sharing_labels(Group(sharing_mode="mig", mig_profile="all-1g.10gb"))
    assert labels == {MIG_CONFIG_LABEL: "all-1g.10gb", DEVICE_PLUGIN_CONFIG_LABEL: "mig-single"}
    assert all(LABEL_VALUE.match(v) and len(v) <= 63 for v in labels.values())


def test_time_slicing_replicates_nvidia_gpu_and_refuses_larger_requests():
    config = device_plugin_config(Group(sharing_mode="time-slicing", time_slicing_replicas=4))
    _plugin_accepts(config)
    assert config["flags"]["migStrategy"] == "none"
    assert config["sharing"]["timeSlicing"] == {
        "failRequestsGreaterThanOne": True, "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}
    assert sharing_labels(Group(sharing_mode="time-slicing", time_slicing_replicas=4)) == {
        DEVICE_PLUGIN_CONFIG_LABEL: "group-infer"}


@pytest.mark.parametrize(("group", "resources"), [
    (Group(sharing_mode="time-slicing", time_slicing_replicas=4), {"nvidia.com/gpu": 32}),
    (Group(sharing_mode="mig", mig_profile="all-1g.10gb"), {"nvidia.com/gpu": 56}),
    (Group(sharing_mode="mig", mig_profile="all-balanced"),
     {"nvidia.com/mig-3g.40gb": 8, "nvidia.com/mig-2g.20gb": 8, "nvidia.com/mig-1g.10gb": 16}),
    (Group(instance_types=("p4d.24xlarge",), sharing_mode="mig", mig_profile="all-1g.5gb"), {"nvidia.com/gpu": 56}),
])
def test_what_a_node_advertises(group, resources):
    assert advertised_resources(group) == resources


def test_the_config_map_holds_the_default_and_one_config_per_sharing_group():
    groups = [Group(), Group(name="mig", sharing_mode="mig", mig_profile="all-balanced"),
              Group(name="shared", sharing_mode="time-slicing", time_slicing_replicas=2)]
    data = config_map_data(groups)
    assert list(data) == [DEFAULT_CONFIG_NAME, "mig-single", "mig-mixed", "group-shared"]
    assert all(CONFIG_MAP_KEY.match(key) for key in data)
    for text in data.values():
        _plugin_accepts(libyaml_files.load(text))
        # libyaml's emitter writes what PyYAML's pure one wrote for the same config, byte for byte.
        assert text == yaml.safe_dump(libyaml_files.load(text), sort_keys=False)
    assert config_name(groups[1]) == "mig-mixed"
    assert libyaml_files.load(data["mig-mixed"])["flags"]["migStrategy"] == "mixed"
    # A group named like the default, or like a MIG config, keeps its own config.
    assert config_name(Group(name="default")) != DEFAULT_CONFIG_NAME
    assert config_name(Group(name="single", sharing_mode="time-slicing", time_slicing_replicas=2)) != "mig-single"


@pytest.mark.parametrize(("before", "after"), [("all-balanced", "all-1g.10gb"), ("all-1g.10gb", "all-balanced"),
                                               ("all-balanced", None)])
def test_a_mig_profile_change_leaves_older_nodes_the_strategy_of_their_layout(before, after):
    """Nodes keep the layout and labels they booted with: the config their label names stays, with the strategy of
    their layout, whatever the group's profile (or mode) is now."""
    old = Group(sharing_mode="mig", mig_profile=before)
    label = sharing_labels(old)[DEVICE_PLUGIN_CONFIG_LABEL]
    now = Group(sharing_mode="mig", mig_profile=after) if after else Group()
    data = config_map_data([now])
    assert label in data
    assert libyaml_files.load(data[label]) == device_plugin_config(old)


@pytest.mark.parametrize("group", [
    Group(sharing_mode="time-slicing", time_slicing_replicas=1),
    Group(sharing_mode="mig", mig_profile="all-9g.1gb"),
    Group(sharing_mode="mps"),
])
def test_settings_the_checks_refuse_raise_naming_the_group(group):
    with pytest.raises(SharingError, match="node group infer"):
        device_plugin_config(group)


@pytest.mark.parametrize("sharing", [
    GpuSharing(),
    GpuSharing(mode="mig", mig_profile="all-balanced"),
    GpuSharing(mode="time-slicing", replicas=3),
])
def test_the_stack_models_sharing_feeds_the_in_cluster_group(sharing):
    group = Group(**sharing.in_cluster_fields())
    assert group.sharing_mode == sharing.mode
    config = device_plugin_config(group)
    assert (config is None) == (sharing.mode == "none")
