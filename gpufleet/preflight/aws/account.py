"""Account setup the program assumes, and the image it boots: the service-linked roles a created key names when
the stack says they exist, the cost allocation tag a budget filters on, the pinned AMI of the stack's profile.

IAM GetRole answers NoSuchEntity for a role that does not exist (IAM API reference, GetRole errors).
Cost Explorer ListCostAllocationTags gives each tag key's Status, Active | Inactive (Billing and Cost Management
API reference, CostAllocationTag). EC2 DescribeImages: Image.State `available`; an id that does not exist or is
not visible is InvalidAMIID.NotFound / .Malformed / .Unavailable ("Error codes for the Amazon EC2 API").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from components.clouds.aws.key_policy import cluster_roles, role_suffix

from ..findings import Finding
from .clients import COST_EXPLORER_REGION, AwsClients, ask

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster

ROLES = "aws-service-linked-role"
COST_TAG = "aws-cost-allocation-tag"
IMAGE = "aws-image"
# The tag the stack's budget filters on (components/clouds/aws/budget.py CLUSTER_TAG; kept equal by a test).
CLUSTER_TAG = "gpufleet:cluster"


def check_service_linked_roles(clients: AwsClients, cluster: ResolvedCluster) -> list[Finding]:
    """`exists`: the created key's policy names the account-wide roles, and KMS refuses a policy naming a role
    that does not exist; check each is there."""
    spec = cluster.spec
    if spec.storage.kms_key != "create" or spec.identity.service_linked_roles != "exists":
        return []
    fleet = any(g.provisioner == "fleet" for g in spec.node_groups)
    roles = cluster_roles("exists", role_suffix(spec.name, spec.environment, spec.region), fleet).named
    findings = []
    for role in roles:
        if ask(clients, "iam", "get_role", missing=("NoSuchEntity",), RoleName=role.role_name) is None:
            findings.append(Finding(
                ROLES, "identity.service_linked_roles", True,
                f"service-linked role {role.role_name} does not exist in this account; the key policy names it and "
                "KMS refuses a policy naming a missing principal",
                f"create it (aws iam create-service-linked-role --aws-service-name {role.service}), or set "
                "service_linked_roles: per-cluster"))
    return findings


def check_cost_tag(clients: AwsClients, cluster: ResolvedCluster) -> list[Finding]:
    """A budget filters on the cluster tag; AWS Budgets sees only activated cost allocation tags. Advisory: a tag
    appears for activation only after resources carry it, so a first deploy cannot have it active yet."""
    if not cluster.spec.budget.alert_at_percent:
        return []
    answer = ask(clients, "ce", "list_cost_allocation_tags", region=COST_EXPLORER_REGION,
                 TagKeys=[CLUSTER_TAG], Type="UserDefined") or {}
    status = next((t.get("Status") for t in answer.get("CostAllocationTags", []) if t.get("TagKey") == CLUSTER_TAG),
                  None)
    if status == "Active":
        return []
    says = (f"cost allocation tag {CLUSTER_TAG} is {status}" if status else
            f"cost allocation tag {CLUSTER_TAG} is not known to Cost Explorer yet (no resource has carried it)")
    return [Finding(COST_TAG, "budget.alert_at_percent", False,
                    f"{says}: the budget counts no cost until it is active",
                    f"activate it once it appears: aws ce update-cost-allocation-tags-status --cost-allocation-tags-"
                    f"status TagKey={CLUSTER_TAG},Status=Active (Billing console, Cost allocation tags)")]


def check_image(clients: AwsClients, cluster: ResolvedCluster) -> list[Finding]:
    """The pinned AMI of the stack's profile in its region exists, is available and visible to the account."""
    spec = cluster.spec
    entry = cluster.lock.image_entry(spec.image, "aws", spec.region)
    if entry is None:
        return []  # the offline checks refused the stack already
    if entry.id is None:
        return [Finding(IMAGE, "image", True,
                        f"images/lock.yaml has no baked AMI of {spec.image} in {spec.region} (status {entry.status}); "
                        "`pulumi up` refuses to deploy it",
                        f"bake and pin it: pulumi up --stack {entry.stack or 'IMAGES_STACK'}, then gpufleet images pin "
                        f"--stack {entry.stack or 'IMAGES_STACK'}")]
    answer = ask(clients, "ec2", "describe_images", missing=("InvalidAMIID.",), ImageIds=[entry.id])
    images = (answer or {}).get("Images", [])
    if not images:
        return [Finding(IMAGE, "image", True,
                        f"AMI {entry.id} (images/lock.yaml, {spec.image} in {spec.region}) does not exist or is not "
                        "shared with this account",
                        "share the AMI with this account (its launch permission), or bake and pin it here")]
    state = images[0].get("State")
    if state != "available":
        return [Finding(IMAGE, "image", True, f"AMI {entry.id} is {state}, not available",
                        "wait for it to become available, or pin another bake")]
    return []


def check_endpoint(clients: AwsClients, cluster: ResolvedCluster) -> list[Finding]:
    """scheduler kubernetes: the EKS endpoint resolves and /healthz answers from here (a note before the cluster
    exists)."""
    from components.clouds.aws.eks import eks_cluster_name

    from ..endpoint import not_created, probe

    spec = cluster.spec
    name = eks_cluster_name(spec.name, spec.environment)
    answer = ask(clients, "eks", "describe_cluster", missing=("ResourceNotFoundException",), name=name)
    endpoint = ((answer or {}).get("cluster") or {}).get("endpoint")
    if not endpoint:
        return [not_created("aws", name)]
    return probe("aws", endpoint, spec.scheduler.endpoint)
