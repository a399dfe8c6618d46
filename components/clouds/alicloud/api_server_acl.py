"""A public ACK API server limited to named ranges: a CLB access control list bound as a whitelist to the TCP 6443
listener of the load balancer ACK made for the API server.

ACK has no cluster input that limits a public endpoint's sources. It documents one way: an ACL, as a whitelist or a
blacklist, on port 6443 of the cluster's API server CLB. The public endpoint is an EIP on that same CLB, so the
list holds for the internal endpoint too. A whitelist must hold 100.104.0.0/16 (the range ACK's control-plane
components come from), the VPC's range or the nodes' vSwitches (kubelets reach the API server through the VPC), and
the clients' egress ranges (ACK docs "Configure API server access control", alibabacloud.com/help/en/ack/
cluster-access-control, updated Mar 26, 2026). The listener is TCP 6443 ("API Server SLB ... listens on TCP port
6443", ACK Service FAQ, updated Nov 5, 2025).

pulumi-alicloud 4.0.0 binds an ACL only through slb.Listener acl_id, i.e. to a listener it creates itself; ACK
creates this one. cs.ManagedKubernetes reads back the API server CLB's id as slb_id (DescribeClusterResources, type
SLB: aliyun/terraform-provider-alicloud @81c43b6 alicloud/resource_alicloud_cs_managed_kubernetes.go:1283-1287,
resource_alicloud_cs_kubernetes.go:1827-1856). So the list is slb.Acl with one slb.AclEntryAttachment per range (the
provider's replacement for the deprecated entry_list), and this dynamic resource binds it: create and update call
SetLoadBalancerTCPListenerAttribute with AclStatus on, AclType white and AclId; delete turns AclStatus off, so the
listener is open again only when the cluster is. Each call goes through the official SLB SDK
(alibabacloud_slb20140515, the `preflight` extra) with the deployer's credentials (deployer_credentials.py).

ACK opens the public endpoint while it creates the cluster (slb_internet_enabled is a create input, MK:1022) and the
binding follows the cluster, so the endpoint answers every address for the minutes between the two; the API server
still asks every caller for credentials.
"""

from __future__ import annotations

import os
from typing import Any

import pulumi
from pulumi.dynamic import ConfigureRequest, CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult

from .deployer_credentials import credential, provider_settings, service_endpoint

BINDING_TYPE = "pulumi-python:dynamic/alicloud:ApiServerAcl"
API_SERVER_PORT = 6443
# ACK's control-plane components reach the API server from this range (the ACK page above).
ACK_CONTROL_PLANE = "100.104.0.0/16"
WHITELIST = "white"
# A binding is one listener of one load balancer: another of either is another binding.
REPLACED_BY = ("load_balancer_id", "listener_port", "region")
FIELDS = ("load_balancer_id", "listener_port", "acl_id", "acl_type", "region")


class BindingRefused(RuntimeError):
    """Server Load Balancer did not change the listener's access control."""


class ApiServerAclProvider(ResourceProvider):
    """SetLoadBalancerTCPListenerAttribute with the ACL on (create, update) or off (delete). `credential` and
    `endpoint` are for tests; a deploy signs with the provider's credentials at its SLB endpoint (its endpoints
    block's, else the region's)."""

    def __init__(self, credential: Any = None, endpoint: str | None = None) -> None:
        super().__init__()
        self.credential, self.endpoint, self.settings = credential, endpoint, {}

    def configure(self, req: ConfigureRequest) -> None:
        self.settings = provider_settings(req.config, dict(os.environ))

    def _set(self, props: dict[str, Any], status: str) -> None:
        from alibabacloud_slb20140515.client import Client
        from alibabacloud_slb20140515.models import SetLoadBalancerTCPListenerAttributeRequest
        from alibabacloud_tea_openapi.exceptions import AlibabaCloudException
        from alibabacloud_tea_openapi.utils_models import Config

        signer = self.credential if self.credential is not None else credential(self.settings)
        endpoint = self.endpoint or service_endpoint(self.settings, "slb")
        client = Client(Config(credential=signer, region_id=props["region"], endpoint=endpoint))
        request = SetLoadBalancerTCPListenerAttributeRequest(
            region_id=props["region"], load_balancer_id=props["load_balancer_id"],
            listener_port=int(props["listener_port"]), acl_status=status,
            **({"acl_type": props["acl_type"], "acl_id": props["acl_id"]} if status == "on" else {}))
        try:
            client.set_load_balancer_tcplistener_attribute(request)
        except AlibabaCloudException as error:
            # The load balancer went with the cluster: nothing is left to open (the provider reads the same code as
            # deleted: resource_alicloud_slb_load_balancer.go:680).
            if status == "off" and error.code == "InvalidLoadBalancerId.NotFound":
                return
            raise BindingRefused(
                f"SetLoadBalancerTCPListenerAttribute (AclStatus {status}) on {props['load_balancer_id']}:"
                f"{props['listener_port']} refused: {error.code} ({error.message})") from None

    def create(self, props: dict[str, Any]) -> CreateResult:
        self._set(props, "on")
        return CreateResult(id_=f"{props['load_balancer_id']}:{props['listener_port']}", outs=dict(props))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        self._set(news, "on")
        return UpdateResult(outs=dict(news))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        self._set(props, "off")

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [key for key in FIELDS if olds.get(key) != news.get(key)]
        replaces = [key for key in changed if key in REPLACED_BY]
        return DiffResult(changes=bool(changed), replaces=replaces, delete_before_replace=False)


class ApiServerAcl(Resource, module="alicloud", name="ApiServerAcl"):
    """The whitelist binding of one ACL to the API server's listener (see the module's docstring)."""

    def __init__(self, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions) -> None:
        super().__init__(ApiServerAclProvider(), name, props, opts)


def whitelist_entries(vpc_cidr: str, public_cidrs: list[str]) -> list[str]:
    """What the whitelist holds: ACK's control plane, the VPC (nodes and Terway pods), the stack's public ranges;
    each once (the API refuses an entry twice)."""
    return list(dict.fromkeys([ACK_CONTROL_PLANE, vpc_cidr, *public_cidrs]))


def limit_api_server(name: str, acl_name: str, cluster: Any, entries: list[str], region: str,
                     tags: dict[str, str], opts: pulumi.ResourceOptions) -> ApiServerAcl:
    """The ACL with its entries, bound as a whitelist to the cluster's API server listener once every entry is in."""
    import pulumi_alicloud as alicloud

    acl = alicloud.slb.Acl(f"{name}-api-acl", name=acl_name, ip_version="ipv4", tags=tags, opts=opts)
    attached = [alicloud.slb.AclEntryAttachment(f"{name}-api-acl-{index}", acl_id=acl.id, entry=entry,
                                                comment="gpufleet API server whitelist", opts=opts)
                for index, entry in enumerate(entries)]
    return ApiServerAcl(f"{name}-api-acl-binding", {
        "load_balancer_id": cluster.slb_id, "listener_port": API_SERVER_PORT, "acl_id": acl.id,
        "acl_type": WHITELIST, "region": region,
    }, pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=attached)))
