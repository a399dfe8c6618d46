"""ACK eRDMA nodes: Terway's ENI whitelist, so Terway leaves the eRDMA controller's interfaces alone.

ACK's eRDMA page asks for a Terway ENI whitelist beside the eRDMA controller (ACKD use-erdma-in-ack-clusters; the
controller's own error for an ERI whose address Terway took points to ACK's "configure a whitelist for an ENI":
AliyunContainerService/alibabacloud-erdma-controller @72e8f0c internal/drivers/netdev.go:89). Terway's daemon otherwise
takes every secondary ENI of its node into its pool, the ERIs the controller attaches included; the whitelist is
`eni_tag_filter` ("if set, only enis match filter, will be managed": AliyunContainerService/terway @89aadf8
types/daemon/config.go:68), and every ENI Terway's daemon creates carries creator=terway (daemon/config.go:79-82,
types/aliyun.go:8-10), the eRDMA controller's creator=alibabacloud-erdma-controller (erdma-controller
internal/controller/eri.go:26-31). Terway's newer centralized IPAM skips such tagged ERIs by itself; in its daemon
mode eRDMA interfaces still need the eni_tag_filter whitelist (terway docs/erdma-coexistence.md:10, :20-25).

Rendered as Terway's node-level config, so only eRDMA nodes change: a node labelled `terway-config=<ConfigMap>` gets
that kube-system ConfigMap's eni_conf merged over eni-config's (RFC 7396 merge patch) when its daemon starts
(types/daemon/dynamicconfig.go:26-60, pkg/k8s/k8s.go:508-531, types/daemon/config.go:198-214, daemon/builder.go:
138-149). The eRDMA pools put the label on their nodes from the start (ack_pools.pool_labels); a daemon that starts
before the ConfigMap exists falls back to eni-config alone (builder.go:145-147) until it restarts.
"""

from __future__ import annotations

import json

from .manifests import Obj
from .model import InClusterGroup

TERWAY_CONFIG_LABEL = "terway-config"
CONFIG_MAP = "gpufleet-erdma-eni-whitelist"
# Terway's own ENIs only (daemon/config.go:82 tags each one it creates creator=terway).
WHITELIST = {"eni_tag_filter": {"creator": "terway"}}


def terway_config_label() -> dict[str, str]:
    """The node label that gives an eRDMA node's Terway daemon the whitelist."""
    return {TERWAY_CONFIG_LABEL: CONFIG_MAP}


def terway_whitelist_objects(groups: tuple[InClusterGroup, ...]) -> list[Obj]:
    """The node-level Terway config the eRDMA groups' nodes name; nothing without an eRDMA group."""
    if not any(group.fabric == "erdma" for group in groups):
        return []
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CONFIG_MAP, "namespace": "kube-system"},
             "data": {"eni_conf": json.dumps(WHITELIST, sort_keys=True)}}]
