"""Least-privilege node identity: an instance role and profile with only what a GPU node uses.

SSM core (the AWS managed policy) for management without SSH; CloudWatch agent logs to the cluster's
own log group and metrics in the gpufleet namespace; read and write of the S3 prefixes the stack names, and
their buckets' keys through S3 only;
complete-lifecycle-action (and, with GPU metrics, set-instance-health) on the cluster's own groups. No wildcard
actions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

SSM_CORE_POLICY = "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"
METRICS_NAMESPACE = "gpufleet"


@dataclass(frozen=True)
class NodeIdentityArgs:
    """Inputs of AwsNodeIdentity."""

    account_id: pulumi.Input[str]
    """Account of the cluster, for ARNs."""
    region: str
    """Region of the cluster, for ARNs."""
    log_group_arn: pulumi.Input[str]
    """The cluster's log group; the agent writes only there."""
    group_names: list[str]
    """Auto Scaling group names whose lifecycle actions nodes complete."""
    s3_read_prefixes: list[str] = field(default_factory=list)
    """s3://bucket/prefix locations nodes may read."""
    s3_write_prefixes: list[str] = field(default_factory=list)
    """s3://bucket/prefix locations nodes may write (checkpoints)."""
    s3_kms_keys: list[str] = field(default_factory=list)
    """Key ARNs of the buckets' customer-managed keys, used through S3 only."""
    permissions_boundary: str | None = None
    """ARN of a permissions boundary for the role."""
    mark_unhealthy: bool = False
    """Nodes may mark themselves unhealthy in their own groups (the DCGM error watch, gpufleet-gpu-health)."""
    agent_tags: bool = False
    """The CloudWatch agent runs and resolves ${aws:AutoScalingGroupName} from the instance's tags."""
    eks_cluster: str | None = None
    """scheduler kubernetes: the EKS cluster's name; the nodes join it and pull its images (eks_node_statements)."""
    munge_secret_arn: pulumi.Input[str] | None = None
    """scheduler slurm: the munge key's secret, which nodes read once their check passed (slurm_identity.py)."""
    munge_key_arn: pulumi.Input[str] | None = None
    """scheduler slurm: the key the secret is encrypted with."""
    tags: dict[str, str] = field(default_factory=dict)
    """Tags for every resource."""


# A multipart upload (how the SDKs and CLI write large checkpoints) is CreateMultipartUpload, UploadPart and
# CompleteMultipartUpload, all authorized by s3:PutObject; s3:AbortMultipartUpload and s3:ListMultipartUploadParts
# are actions of their own (Service Authorization Reference, Amazon S3; S3 User Guide, "Multipart upload API and
# permissions").
S3_WRITE_ACTIONS = ["s3:AbortMultipartUpload", "s3:ListMultipartUploadParts", "s3:PutObject"]


def _s3_statements(prefixes: list[str], actions: list[str], sid: str) -> list[dict]:
    """`actions` on the objects under each prefix, and ListBucket on the bucket limited to the prefix."""
    statements = []
    for index, uri in enumerate(prefixes):
        bucket, _, prefix = uri.removeprefix("s3://").partition("/")
        prefix = prefix.rstrip("/")
        objects = f"arn:aws:s3:::{bucket}/{prefix}/*" if prefix else f"arn:aws:s3:::{bucket}/*"
        statements.append({"Sid": f"{sid}Objects{index}", "Effect": "Allow", "Action": actions, "Resource": objects})
        listing: dict = {"Sid": f"List{sid}Prefix{index}", "Effect": "Allow", "Action": ["s3:ListBucket"],
                         "Resource": f"arn:aws:s3:::{bucket}"}
        if prefix:
            listing["Condition"] = {"StringLike": {"s3:prefix": [f"{prefix}/*", prefix]}}
        statements.append(listing)
    return statements


def _s3_key_statement(region: str, keys: list[str]) -> list[dict]:
    """SSE-KMS: S3 calls kms:Decrypt for a read (and to complete a multipart upload) and kms:GenerateDataKey for a
    write, as the caller (S3 User Guide, "Protecting data with server-side encryption using AWS KMS keys",
    permissions). kms:ViaService keeps the keys usable through S3 of the stack's region only (KMS Developer Guide,
    kms:ViaService condition key)."""
    if not keys:
        return []
    return [{
        "Sid": "BucketKeysThroughS3",
        "Effect": "Allow",
        "Action": ["kms:Decrypt", "kms:GenerateDataKey"],
        "Resource": keys,
        "Condition": {"StringEquals": {"kms:ViaService": f"s3.{region}.amazonaws.com"}},
    }]


def group_arns(region: str, account_id: str, group_names: list[str]) -> list[str]:
    """The ARNs of the cluster's Auto Scaling groups, any group id (it is known only once a group exists)."""
    return [f"arn:aws:autoscaling:{region}:{account_id}:autoScalingGroup:*:autoScalingGroupName/{group}"
            for group in group_names]


def node_policy_document(account_id: str, log_group_arn: str, args: NodeIdentityArgs,
                         munge: tuple[str, str] | None = None) -> str:
    """The node role's inline policy; `account_id`, `log_group_arn` and `munge` (the munge key's secret and key
    ARNs, scheduler slurm) are the resolved values of args'."""
    region, group_names = args.region, args.group_names
    statements = [
        {
            "Sid": "WriteOwnLogGroup",
            "Effect": "Allow",
            "Action": ["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
            "Resource": [log_group_arn, f"{log_group_arn}:log-stream:*"],
        },
        {
            # cloudwatch:PutMetricData has no resource-level permissions (Service Authorization
            # Reference, Amazon CloudWatch): Resource "*", narrowed by the namespace condition.
            "Sid": "PutOwnMetrics",
            "Effect": "Allow",
            "Action": ["cloudwatch:PutMetricData"],
            "Resource": "*",
            "Condition": {"StringEquals": {"cloudwatch:namespace": METRICS_NAMESPACE}},
        },
        *_s3_statements(args.s3_read_prefixes, ["s3:GetObject"], "Read"),
        *_s3_statements(args.s3_write_prefixes, S3_WRITE_ACTIONS, "Write"),
        *_s3_key_statement(region, args.s3_kms_keys),
    ]
    groups = group_arns(region, account_id, group_names)
    if groups:
        statements.append(
            {
                "Sid": "CompleteOwnLifecycleActions",
                "Effect": "Allow",
                "Action": ["autoscaling:CompleteLifecycleAction", "autoscaling:RecordLifecycleActionHeartbeat"],
                "Resource": groups,
            }
        )
    if groups and args.mark_unhealthy:
        statements.append(
            {"Sid": "MarkOwnInstancesUnhealthy", "Effect": "Allow", "Action": ["autoscaling:SetInstanceHealth"],
             "Resource": groups}
        )
    if args.agent_tags:
        # The agent's ec2tagger resolves ${aws:AutoScalingGroupName} with ec2:DescribeTags and holds every data
        # point until that call succeeds (aws/amazon-cloudwatch-agent plugins/processors/ec2tagger/ec2tagger.go,
        # initial retrieval; CloudWatchAgentServerPolicy grants it). DescribeTags has no resource-level
        # permissions (Service Authorization Reference, Amazon EC2): Resource "*". Only what the agent calls:
        # no DescribeVolumes, as the config asks for no EBS device dimension.
        statements.append(
            {"Sid": "AgentReadsInstanceTags", "Effect": "Allow", "Action": ["ec2:DescribeTags"], "Resource": "*"}
        )
    if args.eks_cluster:
        statements += eks_node_statements(region, account_id, args.eks_cluster)
    if munge:
        statements += node_munge_statements(region, *munge)
    return json.dumps({"Version": "2012-10-17", "Statement": statements}, sort_keys=True)


def key_through_secrets_manager(sid: str, region: str, key_arn: str, actions: list[str]) -> dict:
    """`actions` on the stack key through Secrets Manager of the region only (the munge key's secret)."""
    return {"Sid": sid, "Effect": "Allow", "Action": actions, "Resource": key_arn,
            "Condition": {"StringEquals": {"kms:ViaService": f"secretsmanager.{region}.amazonaws.com"}}}


def node_munge_statements(region: str, secret_arn: str, key_arn: str) -> list[dict]:
    """What a node adds to read the munge key once its check passed."""
    return [
        {"Sid": "ReadMungeKey", "Effect": "Allow", "Action": ["secretsmanager:GetSecretValue"],
         "Resource": secret_arn},
        key_through_secrets_manager("MungeKeyDecrypt", region, key_arn, ["kms:Decrypt"]),
    ]


# What an EKS node itself needs (EKS user guide security/iam-reference/create-node-role.adoc@4d52b4d): image pulls
# from ECR, "required because the built-in add-ons for networking run pods that use container images from Amazon
# ECR" (the actions of AmazonEC2ContainerRegistryPullOnly; ecr:GetAuthorizationToken has no resource-level
# permissions), and, for the Pod Identity agent on the node, eks-auth:AssumeRoleForPodIdentity (manage-access/
# aws-access/service-accounts.adoc, "Agent prerequisites"; its resource is the cluster). ec2:DescribeInstances: the
# Ubuntu EKS image's bootstrap.sh names the node by its PrivateDnsName from `aws ec2 describe-instances` under the
# external cloud provider (AmazonEKSWorkerNodePolicy grants it; no resource-level permissions). Nothing for workloads:
# the VPC CNI, the autoscaler and every other component get their own Pod Identity roles; with --apiserver-endpoint
# and --b64-cluster-ca the join needs no eks:DescribeCluster.
# Pulls name any repository: the add-ons' images sit in per-region EKS registry accounts (EUG add-ons-images.adoc) and
# workloads name their own; what a node may run is decided by the cluster's admission and the pack, not by IAM.
ECR_REPOSITORIES = "arn:aws:ecr:*:*:repository/*"


def eks_node_statements(region: str, account_id: str, cluster: str) -> list[dict]:
    """The node role's statements for joining the EKS cluster `cluster` and pulling its images."""
    return [
        {"Sid": "EcrLogin", "Effect": "Allow", "Action": ["ecr:GetAuthorizationToken"], "Resource": "*"},
        {"Sid": "PullImagesFromEcr", "Effect": "Allow", "Action": ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
         "Resource": ECR_REPOSITORIES},
        {"Sid": "PodIdentityAgentOfOwnCluster", "Effect": "Allow", "Action": ["eks-auth:AssumeRoleForPodIdentity"],
         "Resource": f"arn:aws:eks:{region}:{account_id}:cluster/{cluster}"},
        {"Sid": "NodeNameFromEc2", "Effect": "Allow", "Action": ["ec2:DescribeInstances"], "Resource": "*"},
    ]


class AwsNodeIdentity(pulumi.ComponentResource):
    role_arn: pulumi.Output[str]
    instance_profile_arn: pulumi.Output[str]

    def __init__(self, name: str, args: NodeIdentityArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:NodeIdentity", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        assume = {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"},
                           "Action": "sts:AssumeRole"}],
        }
        role = aws.iam.Role(
            f"{name}-role",
            description=f"gpufleet {name}: GPU node",
            assume_role_policy=json.dumps(assume),
            permissions_boundary=args.permissions_boundary,
            tags=args.tags,
            opts=child,
        )
        aws.iam.RolePolicyAttachment(f"{name}-ssm", role=role.name, policy_arn=SSM_CORE_POLICY, opts=child)
        aws.iam.RolePolicy(
            f"{name}-node",
            role=role.id,
            policy=pulumi.Output.all(args.account_id, args.log_group_arn, args.munge_secret_arn,
                                     args.munge_key_arn).apply(
                lambda values: node_policy_document(values[0], values[1], args,
                                                    (values[2], values[3]) if values[2] else None)
            ),
            opts=child,
        )
        profile = aws.iam.InstanceProfile(f"{name}-profile", role=role.name, tags=args.tags, opts=child)
        self.role_arn = role.arn
        self.instance_profile_arn = profile.arn
        self.register_outputs({"role_arn": self.role_arn, "instance_profile_arn": self.instance_profile_arn})
