"""The EKS control plane of a `scheduler: kubernetes` cluster: its IAM role, its log group on the cluster key, and the
cluster itself (secrets on the key, access entries only, no self-managed add-ons, every log type), with what a node
needs to join it (EksJoin).

Sources (awsdocs/amazon-eks-user-guide, latest/ug, @4d52b4d unless said): the role's trust and managed policy
(security/iam-reference/cluster-iam-role.adoc); the log group EKS writes to, `/aws/eks/<cluster>/cluster`, and the
five log types (observability/control-plane-logs.adoc); secrets encryption on a symmetric key of the cluster's Region,
irreversible (security/security-k8s.adoc, enable-kms); API authentication by access entries only
(manage-access/k8s-access/grant-k8s-access.adoc); clusters made through the API get self-managed add-ons unless
bootstrapSelfManagedAddons is false (workloads/eks-add-ons.adoc).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from .eks_join import EksJoin

CLUSTER_POLICY = "arn:aws:iam::aws:policy/AmazonEKSClusterPolicy"
LOG_TYPES = ["api", "audit", "authenticator", "controllerManager", "scheduler"]
TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"}, "Action": "sts:AssumeRole"}],
}


def eks_cluster_name(cluster: str, environment: str) -> str:
    """The EKS cluster's name: unique per Region and account (clouds/aws/names.py), known before it exists so the log
    group, the key policy and the node groups can name it."""
    return f"gpufleet-{cluster}-{environment}"


def eks_log_group_name(cluster_name: str) -> str:
    """The log group EKS sends control-plane logs to; made first so it is on the key and keeps the retention."""
    return f"/aws/eks/{cluster_name}/cluster"


def eks_log_groups(scheduler: str, cluster: str, environment: str) -> tuple[str, ...]:
    """The log groups a cluster key admits beside the cluster's own: the EKS control plane's with Kubernetes."""
    return (eks_log_group_name(eks_cluster_name(cluster, environment)),) if scheduler == "kubernetes" else ()


@dataclass(frozen=True)
class ControlPlaneArgs:
    """Inputs of control_plane."""

    cluster_name: str
    version: str
    """Kubernetes minor, e.g. 1.35."""
    subnet_ids: list[pulumi.Output[str]]
    """The cluster's private subnets: the control plane's network interfaces go there."""
    key_arn: pulumi.Output[str]
    """The stack key: secrets and the control-plane log group."""
    log_retention_days: int
    node_security_group_id: pulumi.Input[str] | None = None
    """Also on the control plane's network interfaces: the node group admits all traffic from itself, so nodes and
    control plane reach each other whatever groups the nodes carry (EKS user guide networking/sec-group-reqs.adoc:
    the groups given at creation go on the interfaces EKS makes for the cluster, beside the cluster group)."""
    public_cidrs: list[str] = field(default_factory=list)
    """Ranges the public endpoint answers; empty: no public endpoint."""
    permissions_boundary: str | None = None
    protect: bool = False
    """prod: the cluster is protected in Pulumi and refuses deletion at AWS (deletion_protection)."""
    tags: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ControlPlane:
    """The cluster and what the rest of the stack reads from it."""

    cluster: aws.eks.Cluster
    join: EksJoin
    role: aws.iam.Role


def cluster_role(name: str, args: ControlPlaneArgs, opts: pulumi.ResourceOptions
                 ) -> tuple[aws.iam.Role, aws.iam.RolePolicyAttachment]:
    """The role the control plane runs as, with AmazonEKSClusterPolicy."""
    role = aws.iam.Role(
        f"{name}-eks-role",
        description=f"gpufleet {name}: EKS control plane",
        assume_role_policy=json.dumps(TRUST),
        permissions_boundary=args.permissions_boundary,
        tags=args.tags,
        opts=opts,
    )
    attachment = aws.iam.RolePolicyAttachment(f"{name}-eks-role", role=role.name, policy_arn=CLUSTER_POLICY, opts=opts)
    return role, attachment


def control_plane(name: str, args: ControlPlaneArgs, opts: pulumi.ResourceOptions) -> ControlPlane:
    """The log group, the role and the EKS cluster; the cluster waits for both."""
    log_group = aws.cloudwatch.LogGroup(
        f"{name}-eks-logs",
        name=eks_log_group_name(args.cluster_name),
        retention_in_days=args.log_retention_days,
        kms_key_id=args.key_arn,
        tags=args.tags,
        opts=opts,
    )
    role, attachment = cluster_role(name, args, opts)
    cluster = aws.eks.Cluster(
        f"{name}-eks",
        name=args.cluster_name,
        version=args.version,
        role_arn=role.arn,
        vpc_config=aws.eks.ClusterVpcConfigArgs(
            subnet_ids=args.subnet_ids,
            endpoint_private_access=True,
            endpoint_public_access=bool(args.public_cidrs),
            public_access_cidrs=args.public_cidrs or None,
            security_group_ids=[args.node_security_group_id] if args.node_security_group_id else None,
        ),
        encryption_config=aws.eks.ClusterEncryptionConfigArgs(
            provider=aws.eks.ClusterEncryptionConfigProviderArgs(key_arn=args.key_arn), resources=["secrets"]
        ),
        # The identity that runs `pulumi up` gets its admin entry from the program (eks_access.py), in the plan and
        # gone with the stack, rather than one EKS makes and nothing shows.
        access_config=aws.eks.ClusterAccessConfigArgs(
            authentication_mode="API", bootstrap_cluster_creator_admin_permissions=False
        ),
        bootstrap_self_managed_addons=False,
        enabled_cluster_log_types=LOG_TYPES,
        deletion_protection=args.protect,
        tags=args.tags,
        opts=pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(depends_on=[log_group, attachment], protect=args.protect)
        ),
    )
    return ControlPlane(cluster, join_of(cluster), role)


def join_of(cluster: aws.eks.Cluster) -> EksJoin:
    """What a node needs to join `cluster`, from the cluster's outputs."""
    return EksJoin(
        cluster_name=cluster.name,
        endpoint=cluster.endpoint,
        certificate_authority=cluster.certificate_authority.apply(lambda ca: ca.data or ""),
        service_cidr=cluster.kubernetes_network_config.apply(lambda config: config.service_ipv4_cidr or ""),
    )
