"""The cluster's EKS managed add-ons, each pinned by addon_version (gpufleet/catalog/eks_addons.yaml), in place of the
self-managed ones EKS leaves out (bootstrap_self_managed_addons false): VPC CNI, kube-proxy and the Pod Identity
Agent before the nodes (daemon sets, ready with no node), CoreDNS once the node groups exist (a deployment: without
a node to run on it never turns ACTIVE). The VPC CNI gets its permissions by Pod Identity, in a role of its own with
AmazonEKS_CNI_Policy (EKS user guide networking/cni-iam-role.adoc), never through the node role.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import pulumi
import pulumi_aws as aws

from gpufleet.catalog.managed_addons import AddonPin, EksAddons, load_eks_addons

from ... import runtime
from .pod_identity import Workload, workload_role

BEFORE_NODES = ("eks-pod-identity-agent", "vpc-cni", "kube-proxy")
AFTER_NODES = ("coredns",)
CNI_POLICY = "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy"
CNI_SERVICE_ACCOUNT = "aws-node"  # the VPC CNI's daemon set runs as kube-system/aws-node


def addon_pins(minor: str) -> dict[str, AddonPin]:
    """The add-ons of `minor` in creation order; a minor the catalog lacks stops the run naming the field (exit 2)."""
    try:
        return load_eks_addons().for_minor(minor)
    except KeyError as missing:
        raise pulumi.RunError(f"scheduler.version: {missing.args[0]}") from None


def refuse_unpinned_addons(minor: str) -> None:
    """Stop a real deploy whose add-on versions are neither pinned nor read (a preview warns); the offline plan goes
    on, showing the add-on without a version and the unread fact."""
    addon_pins(minor)  # a minor the catalog lacks: the field's error first
    why = load_eks_addons().unpinned(minor, EksAddons.NAMES)
    if why:
        runtime.refuse_unread(why)


def managed_addons(name: str, cluster: aws.eks.Cluster, minor: str, names: Sequence[str], cni_role_arn:
                   pulumi.Input[str] | None, tags: dict[str, str], opts: pulumi.ResourceOptions,
                   after: Sequence[pulumi.Resource] = (), configuration: Mapping[str, dict] | None = None,
                   ) -> list[aws.eks.Addon]:
    """The add-ons in `names`, one after the other in that order and the first after `after`; the VPC CNI with its
    Pod Identity role; `configuration`: add-on -> its configuration values (the add-on's own schema)."""
    pins = addon_pins(minor)
    created: list[aws.eks.Addon] = []
    for addon in names:
        associations = None
        if addon == "vpc-cni" and cni_role_arn is not None:
            associations = [aws.eks.AddonPodIdentityAssociationArgs(role_arn=cni_role_arn,
                                                                    service_account=CNI_SERVICE_ACCOUNT)]
        created.append(aws.eks.Addon(
            f"{name}-{addon}",
            cluster_name=cluster.name,
            addon_name=addon,
            addon_version=pins[addon].version,
            pod_identity_associations=associations,
            configuration_values=json.dumps(configuration[addon], sort_keys=True)
            if configuration and addon in configuration else None,
            tags=tags,
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=created[-1:] or list(after))),
        ))
    return created


def coredns_configuration(tolerations: list[dict]) -> dict[str, dict]:
    """CoreDNS runs on the GPU nodes when they are all it has: it tolerates the groups' taints. `tolerations` is a
    key of the CoreDNS add-on's configuration schema (`aws eks describe-addon-configuration --addon-name coredns`;
    AWS containers blog "Amazon EKS add-ons: advanced configuration"); it replaces the add-on's default list, so
    CriticalAddonsOnly stays tolerated as that list has it."""
    if not tolerations:
        return {}
    return {"coredns": {"tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}, *tolerations]}}


def cni_role(name: str, cluster_name: str, boundary: str | None, tags: dict[str, str], opts: pulumi.ResourceOptions
             ) -> tuple[aws.iam.Role, aws.iam.RolePolicyAttachment]:
    """The VPC CNI's own role with AmazonEKS_CNI_Policy, assumed through Pod Identity by kube-system/aws-node of this
    cluster only; the add-on waits for the attachment."""
    workload = Workload(cluster_name, "kube-system", CNI_SERVICE_ACCOUNT)
    role = workload_role(f"{name}-vpc-cni", f"gpufleet {name}: VPC CNI (EKS Pod Identity)", workload, boundary, tags,
                         opts)
    attachment = aws.iam.RolePolicyAttachment(f"{name}-vpc-cni", role=role.name, policy_arn=CNI_POLICY, opts=opts)
    return role, attachment
