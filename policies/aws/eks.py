"""EKS rules: the control plane (secrets on a customer key, API endpoint private or limited to named ranges, every
control-plane log type, access entries only), cluster-admin access, and the nodes' role.

Input names are pulumi_aws 7.x's (pulumi_aws/eks/cluster.py, access_entry.py, access_policy_association.py), as the
engine hands them to the pack: camelCase. Defaults a missing input falls back to are the EKS API's: the endpoint is
public to 0.0.0.0/0 (VpcConfigRequest), authentication is CONFIG_MAP (CreateAccessConfigRequest: "If you create a
cluster by using the EKS API, AWS SDKs, or AWS CloudFormation, the default is CONFIG_MAP"). Checkov ids are those
of bridgecrewio/checkov's EKS checks (CKV_AWS_37 control-plane logging, 38 public endpoint to 0.0.0.0/0, 39 public
endpoint, 58 secrets encryption).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpufleet.stackfile.address_ranges import parse_range, too_wide

from ..meta import MANDATORY, Config, Finding, Node, Props, Rule, Stack, resource_rule, stack_rule
from ..props import UNKNOWN, JsonError, as_bool, get, items
from .iam_documents import ROLE_TYPE, documents, matches, statements

CLUSTER = "aws:eks/cluster:Cluster"
ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
ACCESS_POLICY_ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
ROLE_POLICY_ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
POLICY = "aws:iam/policy:Policy"

# The control-plane log types EKS can send to CloudWatch Logs (EKS user guide, control-plane-logs.html;
# pulumi_aws eks Cluster enabled_cluster_log_types).
LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")
# EKS access policies that administer the whole cluster (EKS user guide, access-policy-permissions.html):
# AmazonEKSClusterAdminPolicy is cluster-admin, AmazonEKSAdminPolicy admin on every namespace it is scoped to.
ADMIN_POLICIES = ("AmazonEKSClusterAdminPolicy", "AmazonEKSAdminPolicy")
ACCOUNT_ROOT = re.compile(r"^arn:aws(?:-[a-z]+)*:iam::\d{12}:root$")
# Access entry types a node's role registers with (pulumi_aws eks AccessEntry `type`).
NODE_ENTRY_TYPES = ("EC2_LINUX", "EC2_WINDOWS")
# What the nodes' role must not carry: the VPC CNI's write actions (AWS managed policy AmazonEKS_CNI_Policy v5; the
# CNI's own role by Pod Identity holds them) and the Cluster Autoscaler's (kubernetes/autoscaler
# cluster-autoscaler/cloudprovider/aws/README.md, IAM policy: its own role). On the node role every pod on the node
# could use them through the instance metadata.
WORKLOAD_ACTIONS = (
    "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses", "ec2:AssignIpv6Addresses",
    "ec2:UnassignIpv6Addresses", "ec2:AttachNetworkInterface", "ec2:CreateNetworkInterface",
    "ec2:DeleteNetworkInterface", "ec2:DetachNetworkInterface", "ec2:ModifyNetworkInterfaceAttribute",
    "autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup",
    "autoscaling:UpdateAutoScalingGroup",
)
WORKLOAD_MANAGED_POLICIES = ("AmazonEKS_CNI_Policy", "AutoScalingFullAccess")


def check_secrets_encrypted(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    encryption = get(props, "encryptionConfig")
    if encryption is UNKNOWN:
        return
    resources, key = items(encryption, "resources"), get(encryption, "provider", "keyArn")
    if resources is UNKNOWN or key is UNKNOWN:
        return
    if "secrets" not in resources or not key:
        yield ("Kubernetes secrets are not encrypted with a customer key: set encryption_config = {resources: "
               "['secrets'], provider: {key_arn: <the stack's KMS key>}} (irreversible once set)")
    elif isinstance(key, str) and ":alias/aws/" in key:
        yield f"encryption_config.provider.key_arn is an AWS managed alias ({key}): use the stack's customer key"


def check_endpoint_private(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    vpc = get(props, "vpcConfig")
    public = get(vpc, "endpointPublicAccess")
    if vpc is UNKNOWN or public is UNKNOWN or as_bool(public) is False:
        return
    cidrs = items(vpc, "publicAccessCidrs")
    if cidrs is UNKNOWN or any(item is UNKNOWN for item in cidrs):
        return
    written = [str(item) for item in cidrs] or ["0.0.0.0/0 (the EKS default)"]
    nets = [net for item in cidrs if (net := parse_range(item)) is not None] if cidrs else [parse_range("0.0.0.0/0")]
    wide = too_wide(net for net in nets if net is not None)
    if wide or len(nets) < len(cidrs):
        reason = wide or "a range that does not parse"
        yield (f"the API server endpoint is public to {', '.join(written)}: {reason}; set "
               "vpc_config.endpoint_public_access = False (private), or public_access_cidrs to the administrators' "
               "ranges")


def check_control_plane_logs(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    enabled = items(props, "enabledClusterLogTypes")
    if enabled is UNKNOWN:
        return
    missing = [kind for kind in LOG_TYPES if kind not in enabled]
    if missing:
        yield (f"control-plane log types {', '.join(missing)} are off: set enabled_cluster_log_types = "
               f"{list(LOG_TYPES)}")


def check_access_entries_only(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    mode = get(props, "accessConfig", "authenticationMode")
    if mode is UNKNOWN or mode == "API":
        return
    shown = "not set (the EKS API's default is CONFIG_MAP)" if mode is None else repr(mode)
    yield (f"access_config.authentication_mode is {shown}: set 'API' so access is granted by access entries only, "
           "not the aws-auth ConfigMap")


def _admin_policy(policy_arn: object) -> str | None:
    if not isinstance(policy_arn, str):
        return None
    return next((name for name in ADMIN_POLICIES if policy_arn.endswith(f":cluster-access-policy/{name}")), None)


def check_no_wide_admin(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    policy, principal = _admin_policy(get(props, "policyArn")), get(props, "principalArn")
    if policy is None or not isinstance(principal, str):
        return
    if "*" in principal or "?" in principal:
        yield f"{policy} is granted to a wildcard principal ({principal}): name the IAM roles that administer it"
    elif ACCOUNT_ROOT.fullmatch(principal):
        yield (f"{policy} is granted to the account root ({principal}), which any principal of the account the "
               "account's IAM policies allow can use: name the IAM roles that administer the cluster")


def _role_name_of(arn: object) -> str | None:
    """The role name an IAM role ARN ends with (a path before it dropped)."""
    return arn.rsplit("/", 1)[-1] if isinstance(arn, str) and ":role/" in arn else None


def _names(node: Node, prop: str, role: Node) -> bool:
    """Whether `node` names `role` through `prop`: a recorded dependency on it, else the role's name as text."""
    urns = node.property_dependencies.get(prop)
    if urns:
        return role.urn in urns
    value, name = get(node.props, prop), get(role.props, "name")
    return isinstance(name, str) and bool(name) and (value == name or _role_name_of(value) == name)


def node_roles(stack: Stack) -> list[Node]:
    """Roles that nodes join the cluster with: the principal of an EC2 access entry."""
    entries = [e for e in stack.of_type(ACCESS_ENTRY) if get(e.props, "type") in NODE_ENTRY_TYPES]
    return [role for role in stack.of_type(ROLE_TYPE) if any(_names(e, "principalArn", role) for e in entries)]


def _documents_of(stack: Stack, role: Node) -> Iterator[tuple[str, object]]:
    """(where, document) of every permission document the role holds: inline, role policies, attached policies."""
    for label, document in documents(ROLE_TYPE, role.props):
        yield f"its {label}", document
    for policy in stack.of_type(ROLE_POLICY):
        if _names(policy, "role", role):
            yield f"role policy {policy.name}", get(policy.props, "policy")
    for attachment in stack.of_type(ROLE_POLICY_ATTACHMENT):
        if _names(attachment, "role", role):
            for managed in stack.dependencies_of(attachment, POLICY, prop="policyArn"):
                yield f"attached policy {managed.name}", get(managed.props, "policy")


def _attached_arns(stack: Stack, role: Node) -> list[str]:
    arns = [arn for arn in items(role.props, "managedPolicyArns") or [] if isinstance(arn, str)]
    arns += [arn for a in stack.of_type(ROLE_POLICY_ATTACHMENT)
             if _names(a, "role", role) and isinstance(arn := get(a.props, "policyArn"), str)]
    return arns


def check_node_role(stack: Stack, config: Config) -> Iterator[Finding]:
    for role in node_roles(stack):
        for arn in _attached_arns(stack, role):
            managed = next((m for m in WORKLOAD_MANAGED_POLICIES if arn.endswith(f":policy/{m}")), None)
            if managed:
                yield role.urn, (f"the EKS node role has {managed} attached: give that permission to the component's "
                                 "own role by Pod Identity, not to every pod on the node")
        for where, document in _documents_of(stack, role):
            try:
                granted = [statement for statement in statements(document, where) if statement.allows]
            except JsonError as exc:
                yield role.urn, f"{where} is {exc}: fix the policy document"
                continue
            for statement in granted:
                hit = sorted({action for action in WORKLOAD_ACTIONS
                              if any(matches(pattern, action) for pattern in statement.strings("Action"))})
                if hit:
                    yield role.urn, (f"the EKS node role's {statement.where} allows workload actions "
                                     f"{', '.join(hit)}: the VPC CNI and the Cluster Autoscaler get them through "
                                     "their own Pod Identity roles")


RULES: list[Rule] = [
    resource_rule(
        "aws-eks-secrets-encrypted",
        "EKS clusters envelope-encrypt Kubernetes secrets with a customer-managed KMS key.",
        MANDATORY, "aws", [CLUSTER], check_secrets_encrypted, checkov=("CKV_AWS_58",),
    ),
    resource_rule(
        "aws-eks-endpoint-private",
        "The EKS API server endpoint is private, or public only to ranges no wider than a /24 (IPv4) together.",
        MANDATORY, "aws", [CLUSTER], check_endpoint_private, checkov=("CKV_AWS_38", "CKV_AWS_39"),
    ),
    resource_rule(
        "aws-eks-control-plane-logs",
        "EKS clusters send every control-plane log type (api, audit, authenticator, controllerManager, scheduler).",
        MANDATORY, "aws", [CLUSTER], check_control_plane_logs, checkov=("CKV_AWS_37",),
    ),
    resource_rule(
        "aws-eks-access-entries-only",
        "EKS clusters authenticate by access entries only (authentication_mode API, no aws-auth ConfigMap).",
        MANDATORY, "aws", [CLUSTER], check_access_entries_only,
    ),
    resource_rule(
        "aws-eks-no-wide-cluster-admin",
        "No EKS admin access policy is associated with a wildcard or account-root principal.",
        MANDATORY, "aws", [ACCESS_POLICY_ASSOCIATION], check_no_wide_admin,
    ),
    stack_rule(
        "aws-eks-node-role-no-workload-permissions",
        "The role EKS nodes join with (an EC2 access entry's principal) carries no VPC CNI or Cluster Autoscaler "
        "write actions; those components get their own roles.",
        MANDATORY, "aws", [ACCESS_ENTRY, ROLE_TYPE, ROLE_POLICY, ROLE_POLICY_ATTACHMENT, POLICY], check_node_role,
    ),
]
