"""The ACK Pro control plane of a `scheduler: kubernetes` Alibaba Cloud cluster: cs.ManagedKubernetes in the stack's
VPC on its vSwitches, its secrets on the stack's KMS key, RRSA on, the API server private, control-plane logs in a
log project of the stack's own.

Sources (aliyun/terraform-provider-alicloud @81c43b6, alicloud/resource_alicloud_cs_managed_kubernetes.go, "MK"):
- cluster_spec ack.pro.small is ACK Pro (the SDK's cluster_spec text); secrets encryption is Pro only (ALI
  doc-detail/187472.htm). Create sends encryption_provider_key as EncryptionProviderKey (MK:1091); an update goes
  through UpdateKMSEncryption with disable_encryption (MK:1495-1497, :1867-1875) and while disable_encryption is true
  the key is ignored (MK:1906-1911): so both are set, disable_encryption False, as the SDK's note asks.
- enable_rrsa is sent at create (MK:1084) and cannot be turned off (SDK text); rrsa_metadata (MK:881-902) gives the
  OIDC issuer and provider the RRSA roles trust (ack_rrsa.py).
- slb_internet_enabled defaults to true (MK:356-359) and is sent as EndpointPublicAccess (MK:1022) at create only
  (no update reads it): True only for scheduler.endpoint public, whose sources api_server_acl.py limits.
  new_nat_gateway defaults to true (MK:257, sent as SnatEntry MK:1018): the stack's network has its own NAT gateway,
  so False.
- control_plane_log_components / _project / _ttl (MK:747-763, sent MK:1096-1106): apiserver, kcm, scheduler, ccm and
  controlplane-events are the components the SDK lists; without a project ACK makes k8s-log-{ClusterID} outside the
  stack, so the stack creates the project.
- security_group_id (MK:583, sent MK:1034): the control plane's ENIs join the stack's node security group, whose
  members accept each other (security.py: inner_access_policy Accept and a self rule), so API server and kubelets meet
  there; pools take the same group in security_group_ids.
- Terway: pod_vswitch_ids (MK:227, sent MK:1054) with the terway-eniip add-on at create (provider docs
  cs_managed_kubernetes "If you want to use Terway ... specify pod_vswitch_ids and addons with terway-eniip"). The docs
  recommend pod vSwitches apart from the node vSwitches "but in the same zones": the node vSwitches serve here, so pod
  IPs come from the node vSwitches (each pod an ENI secondary address); the address demand per zone does not count
  pods yet (not sized: it depends on pods per node).
- service_cidr is ForceNew and "cannot be duplicated with the VPC CIDR" (provider docs; MK:240-244).
- name: 1-63 characters (MK:40-46), unique in the account (SDK text).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from ipaddress import IPv4Network

import pulumi
import pulumi_alicloud as alicloud

ACK_PRO = "ack.pro.small"
LOG_COMPONENTS = ["apiserver", "kcm", "scheduler", "ccm", "controlplane-events"]
# ACK's documented service ranges are private; the first that does not overlap the stack's VPC is used.
SERVICE_CIDRS = ("172.21.0.0/20", "192.168.0.0/20", "10.255.0.0/20")
# The Service range is ForceNew (MK:240-244) and pod vSwitches "Only works for Create" (SDK text): a new cluster.
CREATE_ONLY = ["serviceCidr", "podVswitchIds"]
# `addons` only works at create (SDK text); later add-ons are cs.KubernetesAddon resources (ack_addons.py).
CREATE_TIME_INPUTS = ["addons"]


def service_cidr(vpc_cidr: IPv4Network | None) -> str:
    """The Service range: the first candidate apart from the stack's VPC (a brought VPC's range is unknown here)."""
    for candidate in SERVICE_CIDRS:
        if vpc_cidr is None or not IPv4Network(candidate).overlaps(vpc_cidr):
            return candidate
    raise ValueError(f"network.cidr {vpc_cidr} overlaps every Service range candidate {', '.join(SERVICE_CIDRS)}")


@dataclass(frozen=True)
class AckArgs:
    """Inputs of the ACK control plane."""

    cluster_name: str
    version: str
    vswitch_ids: list[pulumi.Input[str]]
    security_group_id: pulumi.Input[str]
    key_id: pulumi.Input[str]
    service_cidr: str
    log_project: pulumi.Input[str]
    log_ttl_days: int
    addons: list[alicloud.cs.ManagedKubernetesAddonArgs]
    """The add-ons only a create installs (the network plugin): ack_addons.create_addons."""
    public_endpoint: bool = False
    """scheduler.endpoint public: an internet endpoint (an EIP on the API server's CLB)."""
    protect: bool = False
    """prod: deletion protection in ACK and in Pulumi."""
    tags: dict[str, str] = field(default_factory=dict)


def managed_cluster(name: str, args: AckArgs, opts: pulumi.ResourceOptions) -> alicloud.cs.ManagedKubernetes:
    """The ACK Pro cluster with no node of its own: every node comes from a node pool (ack_pools.py)."""
    return alicloud.cs.ManagedKubernetes(
        f"{name}-ack",
        name=args.cluster_name,
        cluster_spec=ACK_PRO,
        version=args.version,
        vswitch_ids=args.vswitch_ids,
        pod_vswitch_ids=args.vswitch_ids,
        security_group_id=args.security_group_id,
        service_cidr=args.service_cidr,
        new_nat_gateway=False,
        slb_internet_enabled=args.public_endpoint,
        encryption_provider_key=args.key_id,
        disable_encryption=False,
        enable_rrsa=True,
        control_plane_log_components=LOG_COMPONENTS,
        control_plane_log_project=args.log_project,
        control_plane_log_ttl=str(args.log_ttl_days),
        deletion_protection=args.protect,
        addons=args.addons,
        tags=args.tags,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
            protect=args.protect, replace_on_changes=CREATE_ONLY, ignore_changes=CREATE_TIME_INPUTS)),
    )
