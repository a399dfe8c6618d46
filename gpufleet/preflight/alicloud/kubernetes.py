"""What an ACK stack needs beyond the VM checks: an API server the deployer reaches (scheduler.endpoint), read as
EKS's and AKS's are (preflight/aws/account.py, preflight/azure/kubernetes.py) and probed by preflight/endpoint.py.

CS DescribeClustersV1 (GET /api/v1/clusters, `name` a fuzzy filter; help.aliyun.com/en/ack/ack-managed-and-ack-
dedicated/developer-reference/api-cs-2015-12-15-describeclustersv1) lists the clusters of the region; the stack's is
the one of its exact name. Its `master_url` is a JSON text of the API server's endpoints: `api_server_endpoint`
(the internet endpoint, present with endpoint public) and `intranet_api_server_endpoint` (inside the VPC), the keys
the provider itself reads from the cluster's master_url (terraform-provider-alicloud 81c43b6,
alicloud/resource_alicloud_cs_managed_kubernetes.go:1402-1406).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from alibabacloud_cs20151215 import models as cs

from ..findings import Finding

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster

    from .clients import AlicloudClients

ENDPOINT_KEY = {"public": "api_server_endpoint", "private": "intranet_api_server_endpoint"}
PAGE = 100


def check_endpoint(clients: AlicloudClients, cluster: ResolvedCluster) -> list[Finding]:
    """The ACK API server's endpoint for the stack's access resolves and /healthz answers from here (a note before
    the cluster exists, or while it has no such endpoint yet)."""
    from gpufleet.clouds.alicloud.names import ack_cluster_name

    from ..endpoint import not_created, probe

    spec = cluster.spec
    name = ack_cluster_name(spec.name, spec.environment, spec.region)
    answer = clients.call("cs", "DescribeClustersV1", cs.DescribeClustersV1Request(
        name=name, region_id=spec.region, page_size=PAGE)) or {}
    found = [item for item in answer.get("clusters") or [] if item.get("name") == name]
    access = spec.scheduler.endpoint
    try:
        endpoints = json.loads(found[0].get("master_url") or "{}") if found else {}
    except ValueError:
        endpoints = {}
    url = endpoints.get(ENDPOINT_KEY[access]) if isinstance(endpoints, dict) else None
    if not url:
        return [not_created("alicloud", name)]
    return probe("alicloud", url, access)
