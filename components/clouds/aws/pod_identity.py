"""Workload roles by EKS Pod Identity: one role per component that calls AWS, trusted by pods.eks.amazonaws.com only
(sts:AssumeRole and sts:TagSession: EKS user guide manage-access/aws-access/service-accounts.adoc, pod identity role
trust, awsdocs/amazon-eks-user-guide@4d52b4d), holding only that component's actions, and associated with its
service account. The trust also requires the session tags EKS adds to the request (same page, "List of session tags
added by EKS Pod Identity") to name this cluster, namespace and service account, so no other cluster of the account
can associate the role. No OIDC provider, and the node role holds no workload permission.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from components.kubernetes import SERVICE_ACCOUNTS


def pod_trust(cluster_name: str, namespace: str, service_account: str) -> dict:
    """The trust of a role EKS Pod Identity assumes for one service account of one cluster."""
    return {
        "Version": "2012-10-17",
        "Statement": [{
            "Sid": "AllowEksAuthToAssumeRoleForPodIdentity",
            "Effect": "Allow",
            "Principal": {"Service": "pods.eks.amazonaws.com"},
            "Action": ["sts:AssumeRole", "sts:TagSession"],
            "Condition": {"StringEquals": {
                "aws:RequestTag/eks-cluster-name": cluster_name,
                "aws:RequestTag/kubernetes-namespace": namespace,
                "aws:RequestTag/kubernetes-service-account": service_account,
            }},
        }],
    }


@dataclass(frozen=True)
class WorkloadScope:
    """What a component's policy may name: the cluster's account and Region and its Auto Scaling groups."""

    account_id: str
    region: str
    group_names: list[str] = field(default_factory=list)

    def group_arns(self) -> list[str]:
        return [f"arn:aws:autoscaling:{self.region}:{self.account_id}:autoScalingGroup:*:autoScalingGroupName/{name}"
                for name in self.group_names]


def autoscaler_policy(scope: WorkloadScope) -> dict:
    """Cluster Autoscaler on explicit `--nodes` groups with launch templates: the reads of the minimum policy and
    `ec2:DescribeLaunchTemplateVersions` for launch templates (kubernetes/autoscaler cluster-autoscaler/cloudprovider/
    aws/README.md, "IAM Policy", @062f28a6); resizing and terminating limited to the stack's own groups by ARN, as
    that README allows ("restrict the target resources ... by specifying Auto Scaling Group ARNs"): a tag
    condition would admit any group someone tags. No eks:DescribeNodegroup (no managed node groups) and no
    GetInstanceTypesFromInstanceRequirements (the groups name their types).
    autoscaling:DescribeScalingActivities: the autoscaler reads a group's failed launches with it to back off from
    a group AWS cannot fill (cluster-autoscaler-1.35.2 cloudprovider/aws/auto_scaling_groups.go:536-545,
    isNodeGroupAvailable; README.md:50 lists it); denied, it logs the error and takes the group as available, so a
    p5 group out of capacity would be retried instead of another group being tried."""
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "ReadScalingGroupsAndTypes", "Effect": "Allow", "Resource": "*", "Action": [
            "autoscaling:DescribeAutoScalingGroups", "autoscaling:DescribeAutoScalingInstances",
            "autoscaling:DescribeLaunchConfigurations", "autoscaling:DescribeScalingActivities", "ec2:DescribeImages",
            "ec2:DescribeInstanceTypes", "ec2:DescribeLaunchTemplateVersions"]},
        {"Sid": "ResizeOwnGroups", "Effect": "Allow", "Resource": scope.group_arns(), "Action": [
            "autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"]},
    ]}


# component (components/kubernetes SERVICE_ACCOUNTS) -> its policy
POLICIES: Mapping[str, Callable[[WorkloadScope], dict]] = {"cluster-autoscaler": autoscaler_policy}


@dataclass(frozen=True)
class Workload:
    """Who assumes a workload role: a service account of one cluster."""

    cluster_name: str
    namespace: str
    service_account: str


def workload_role(name: str, description: str, workload: Workload, boundary: str | None, tags: dict[str, str],
                  opts: pulumi.ResourceOptions) -> aws.iam.Role:
    """A role only EKS Pod Identity assumes, for `workload` only."""
    trust = pod_trust(workload.cluster_name, workload.namespace, workload.service_account)
    return aws.iam.Role(name, description=description, assume_role_policy=json.dumps(trust),
                        permissions_boundary=boundary, tags=tags, opts=opts)


def workload_identities(name: str, cluster: aws.eks.Cluster, cluster_name: str, scope: pulumi.Output[WorkloadScope],
                        boundary: str | None, tags: dict[str, str], opts: pulumi.ResourceOptions,
                        ) -> list[aws.eks.PodIdentityAssociation]:
    """For each component of SERVICE_ACCOUNTS: its role, its policy, and the association with its service account."""
    missing = sorted(set(SERVICE_ACCOUNTS) - set(POLICIES))
    if missing:
        raise ValueError(f"components {', '.join(missing)} call AWS but have no policy in pod_identity.POLICIES")
    associations = []
    for component, (namespace, service_account) in SERVICE_ACCOUNTS.items():
        role = workload_role(f"{name}-{component}", f"gpufleet {name}: {component} (EKS Pod Identity)",
                             Workload(cluster_name, namespace, service_account), boundary, tags, opts)
        policy = POLICIES[component]
        aws.iam.RolePolicy(f"{name}-{component}", role=role.id,
                           policy=scope.apply(lambda s, build=policy: json.dumps(build(s), sort_keys=True)),
                           opts=opts)
        associations.append(aws.eks.PodIdentityAssociation(
            f"{name}-{component}", cluster_name=cluster.name, namespace=namespace, service_account=service_account,
            role_arn=role.arn, tags=tags, opts=opts,
        ))
    return associations
