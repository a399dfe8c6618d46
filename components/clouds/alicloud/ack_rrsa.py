"""RRSA roles: a RAM role per in-cluster component that calls Alibaba Cloud APIs, trusted only by the cluster's OIDC
provider for that component's namespace and service account, with exactly the actions the component calls.

Trust (ALI doc-detail/356611.html "Use RRSA to authorize different pods to access different cloud services", and
AliyunContainerService/ack-ram-tool's associate-role, which writes it): Action sts:AssumeRole, Principal Federated
the cluster's ram_oidc_provider_arn, Condition StringEquals oidc:iss = rrsa_oidc_issuer_url, oidc:aud =
sts.aliyuncs.com, oidc:sub = system:serviceaccount:<namespace>:<service account>. The provider's rrsa_metadata gives
the issuer and provider (resource_alicloud_cs_managed_kubernetes.go @81c43b6 :881-902).

The ACK eRDMA Controller add-on: ack-ram-tool pkg/ctl/rrsa/setupaddon/addon/ack-erdma-controller.go @c786909 names its
namespace and service account `ack-erdma-controller` and its role `ack-erdma-controller-<cluster id>` (the add-on
finds the role by that name). Actions: the controller's README @72e8f0c lists seven, ecs:TagResources among them
(internal/controller/eri.go calls TagResources); ack-ram-tool's policy lists the other six. The seven are granted.
None of them supports resource-level authorisation scoped to a cluster in a way the controller's calls could meet
(it creates interfaces), so Resource is "*"; the actions are named, never a wildcard.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_alicloud as alicloud

OIDC_AUDIENCE = "sts.aliyuncs.com"


@dataclass(frozen=True)
class RrsaComponent:
    """One component that calls Alibaba Cloud with its own role."""

    label: str
    namespace: str
    service_account: str
    role_prefix: str
    """The role is `<role_prefix><cluster id>`, the name the component looks for."""
    actions: tuple[str, ...]


ERDMA_CONTROLLER = RrsaComponent(
    label="erdma",
    namespace="ack-erdma-controller",
    service_account="ack-erdma-controller",
    role_prefix="ack-erdma-controller-",
    actions=(
        "ecs:DescribeInstances",
        "ecs:DescribeInstanceTypes",
        "ecs:DescribeNetworkInterfaces",
        "ecs:ModifyNetworkInterfaceAttribute",
        "ecs:CreateNetworkInterface",
        "ecs:AttachNetworkInterface",
        "ecs:TagResources",
    ),
)


def trust_document(provider_arn: str, issuer_url: str, namespace: str, service_account: str) -> str:
    """The RAM trust policy that lets one service account of one cluster assume the role."""
    return json.dumps({"Version": "1", "Statement": [{
        "Effect": "Allow",
        "Action": "sts:AssumeRole",
        "Principal": {"Federated": [provider_arn]},
        "Condition": {"StringEquals": {
            "oidc:iss": issuer_url,
            "oidc:aud": OIDC_AUDIENCE,
            "oidc:sub": f"system:serviceaccount:{namespace}:{service_account}",
        }},
    }]}, sort_keys=True)


def policy_document(actions: tuple[str, ...]) -> str:
    return json.dumps({"Version": "1", "Statement": [
        {"Effect": "Allow", "Action": list(actions), "Resource": ["*"]}]}, sort_keys=True)


def rrsa_role(name: str, component: RrsaComponent, cluster: alicloud.cs.ManagedKubernetes, tags: dict[str, str],
              opts: pulumi.ResourceOptions) -> alicloud.ram.RolePolicyAttachment:
    """The component's role, its policy and their attachment; the attachment is what the add-on waits for."""
    rrsa = cluster.rrsa_metadata
    role = alicloud.ram.Role(
        f"{name}-rrsa-{component.label}",
        role_name=cluster.id.apply(lambda cluster_id: f"{component.role_prefix}{cluster_id}"),
        description=f"gpufleet {name}: RRSA role of {component.namespace}/{component.service_account}",
        assume_role_policy_document=pulumi.Output.all(rrsa.ram_oidc_provider_arn, rrsa.rrsa_oidc_issuer_url).apply(
            lambda values: trust_document(values[0], values[1], component.namespace, component.service_account)),
        tags=tags,
        opts=opts,
    )
    policy = alicloud.ram.Policy(
        f"{name}-rrsa-{component.label}",
        policy_name=cluster.id.apply(lambda cluster_id: f"{component.role_prefix}{cluster_id}"),
        description=f"gpufleet {name}: the Alibaba Cloud API calls of {component.namespace}",
        policy_document=policy_document(component.actions),
        opts=opts,
    )
    return alicloud.ram.RolePolicyAttachment(
        f"{name}-rrsa-{component.label}", role_name=role.role_name, policy_name=policy.policy_name,
        policy_type="Custom", opts=opts)
