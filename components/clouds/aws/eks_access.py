"""Who reaches the EKS API: access entries, the only authentication mode the cluster takes (no aws-auth ConfigMap).

Each admin principal (scheduler.admins, and the identity that runs `pulumi up`, which creates the in-cluster objects)
gets a STANDARD entry with AmazonEKSClusterAdminPolicy on the whole cluster; the node role gets an EC2_LINUX entry,
which takes no access policy (EKS user guide manage-access/k8s-access/grant-k8s-access.adoc: types, "You can't
associate an access policy" to a non-STANDARD entry; access-policy-reference.adoc; awsdocs/amazon-eks-user-guide
@4d52b4d).
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from gpufleet.clouds.mock_ids import digest

ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"


def deployer_arn(parent: pulumi.Resource) -> str:
    """The IAM role or user that runs the program. An assumed role calls as its session (arn:aws:sts::...:assumed-
    role/NAME/SESSION), which an access entry does not take: the session context names the role behind it (IAM
    API GetSessionContext via the provider's aws_iam_session_context data source, issuer_arn)."""
    options = pulumi.InvokeOptions(parent=parent)
    caller = aws.get_caller_identity(opts=options)
    return aws.iam.get_session_context(arn=caller.arn, opts=options).issuer_arn


def admin_access(name: str, cluster: aws.eks.Cluster, principals: list[str], tags: dict[str, str],
                 opts: pulumi.ResourceOptions) -> list[aws.eks.AccessPolicyAssociation]:
    """A STANDARD entry with cluster admin on the whole cluster for each principal, once each; named after the
    principal, so reordering the list replaces nothing."""
    associations = []
    for principal in dict.fromkeys(principals):
        suffix = digest(principal, 8)
        entry = aws.eks.AccessEntry(
            f"{name}-admin-{suffix}",
            cluster_name=cluster.name,
            principal_arn=principal,
            type="STANDARD",
            tags=tags,
            opts=opts,
        )
        associations.append(aws.eks.AccessPolicyAssociation(
            f"{name}-admin-{suffix}",
            cluster_name=cluster.name,
            principal_arn=entry.principal_arn,
            policy_arn=ADMIN_POLICY,
            access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
            opts=opts,
        ))
    return associations


def node_access(name: str, cluster: aws.eks.Cluster, node_role_arn: pulumi.Input[str], tags: dict[str, str],
                opts: pulumi.ResourceOptions) -> aws.eks.AccessEntry:
    """The node role's EC2_LINUX entry: nodes join as system:node:<name> in system:nodes, nothing more."""
    return aws.eks.AccessEntry(f"{name}-nodes", cluster_name=cluster.name, principal_arn=node_role_arn,
                               type="EC2_LINUX", tags=tags, opts=opts)
