"""The managed add-ons and workload identities of an EKS stack: each add-on at the version the catalog pins (a real
run refuses one the catalog leaves null, before any resource), the VPC CNI and Cluster Autoscaler on roles of their
own by Pod Identity with only their actions, CoreDNS after the node groups."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pulumi
import pytest
from conftest import of_type, one, read_cluster, registered_types, without_job_operators, write_stack

from components import runtime
from components.clouds.aws.eks_addons import refuse_unpinned_addons
from gpufleet.catalog.managed_addons import AddonPin, EksAddons, load_eks_addons
from gpufleet.plan.planner import PlanResult, plan_stack
from gpufleet.stackfile import SpecInvalid

ADDON = "aws:eks/addon:Addon"
ROLE = "aws:iam/role:Role"
POD_TRUST = {"Service": "pods.eks.amazonaws.com"}


def eks_cluster() -> dict[str, Any]:
    """The shipped aws-train-eks, named train, without job operators (EKS's own add-ons are what is tested)."""
    cluster = {**copy.deepcopy(read_cluster("aws-train-eks")), "name": "train"}
    cluster["scheduler"] = {"kind": "kubernetes", "version": "1.35"}
    return without_job_operators(cluster)


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> PlanResult:
    return plan_stack(write_stack(tmp_path_factory.mktemp("eks"), "eks", eks_cluster()))


def session(plan: PlanResult, namespace: str, service_account: str) -> dict[str, str]:
    """The session tags EKS Pod Identity puts on its request for this cluster's service account."""
    return {"aws:RequestTag/eks-cluster-name": one(plan, "aws:eks/cluster:Cluster").inputs["name"],
            "aws:RequestTag/kubernetes-namespace": namespace,
            "aws:RequestTag/kubernetes-service-account": service_account}


def named(plan: PlanResult, typ: str, name: str) -> Any:
    (found,) = [r for r in of_type(plan, typ) if r.name == name]
    return found


def test_every_addon_runs_at_the_catalog_version(plan: PlanResult) -> None:
    pins = load_eks_addons().for_minor("1.35")
    addons = {r.inputs["addonName"]: r for r in of_type(plan, ADDON)}
    assert set(addons) == set(EksAddons.NAMES)
    for name, addon in addons.items():
        assert addon.inputs.get("addonVersion") == pins[name].version, name
    assert addons["kube-proxy"].inputs["addonVersion"].startswith("v1.35.")  # kube-proxy follows the cluster minor


def test_addons_before_the_nodes_come_one_after_the_other_and_coredns_after_the_groups(plan: PlanResult) -> None:
    addons = {r.inputs["addonName"]: r for r in of_type(plan, ADDON)}
    assert addons["eks-pod-identity-agent"].urn in addons["vpc-cni"].depends_on
    assert addons["vpc-cni"].urn in addons["kube-proxy"].depends_on
    group = one(plan, "aws:autoscaling/group:Group")
    assert group.urn in addons["coredns"].depends_on
    assert not any(group.urn in addons[name].depends_on for name in ("vpc-cni", "kube-proxy",
                                                                      "eks-pod-identity-agent"))


def test_the_vpc_cni_gets_its_policy_by_pod_identity_not_through_the_node_role(plan: PlanResult) -> None:
    cni = next(r for r in of_type(plan, ADDON) if r.inputs["addonName"] == "vpc-cni")
    role = named(plan, ROLE, "train-vpc-cni")
    assert [a["serviceAccount"] for a in cni.inputs["podIdentityAssociations"]] == ["aws-node"]
    assert cni.property_dependencies["podIdentityAssociations"] == (role.urn,)
    trust = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
    assert [(s["Principal"], s["Action"]) for s in trust] == [(POD_TRUST, ["sts:AssumeRole", "sts:TagSession"])]
    assert trust[0]["Condition"]["StringEquals"] == session(plan, "kube-system", "aws-node")
    attachments = {r.inputs["policyArn"]: r for r in of_type(plan, "aws:iam/rolePolicyAttachment:RolePolicyAttachment")}
    cni_policy = attachments["arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy"]
    assert cni_policy.property_dependencies["role"] == (role.urn,)
    first = next(r for r in of_type(plan, ADDON) if r.inputs["addonName"] == "eks-pod-identity-agent")
    assert cni_policy.urn in first.depends_on  # the VPC CNI comes after the agent, the agent after the policy
    node_role = named(plan, ROLE, "train-node-role").urn
    assert not [a for a in attachments.values() if node_role in a.property_dependencies.get("role", ())
                and "EKS" in a.inputs["policyArn"]]


def test_cluster_autoscaler_resizes_only_the_stack_groups_through_its_pod_identity(plan: PlanResult) -> None:
    association = one(plan, "aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert (association.inputs["namespace"], association.inputs["serviceAccount"]) == ("kube-system",
                                                                                       "cluster-autoscaler")
    role = named(plan, ROLE, "train-cluster-autoscaler")
    assert association.property_dependencies["roleArn"] == (role.urn,)
    (trust,) = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
    assert trust["Principal"] == POD_TRUST
    assert trust["Condition"]["StringEquals"] == session(plan, "kube-system", "cluster-autoscaler")
    policy = json.loads(named(plan, "aws:iam/rolePolicy:RolePolicy", "train-cluster-autoscaler").inputs["policy"])
    statements = {s["Sid"]: s for s in policy["Statement"]}
    resize = statements["ResizeOwnGroups"]
    assert sorted(resize["Action"]) == ["autoscaling:SetDesiredCapacity",
                                        "autoscaling:TerminateInstanceInAutoScalingGroup"]
    group = one(plan, "aws:autoscaling/group:Group").inputs["name"]
    # The GPU group, then the system group EKS names (test_eks_system.py: given only when it may grow).
    assert resize["Resource"][0] == (f"arn:aws:autoscaling:us-east-1:{policy_account(resize)}:autoScalingGroup:*:"
                                     f"autoScalingGroupName/{group}")
    assert len(resize["Resource"]) == 2
    reads = statements["ReadScalingGroupsAndTypes"]["Action"]
    assert all(action.split(":")[1].startswith("Describe") for action in reads)
    # Failed launches, read to back off from a group AWS cannot fill (cloudprovider/aws/auto_scaling_groups.go).
    assert "autoscaling:DescribeScalingActivities" in reads and statements["ReadScalingGroupsAndTypes"][
        "Resource"] == "*"


def policy_account(statement: dict[str, Any]) -> str:
    """The account the policy names (the engine's): ARNs carry it, the test does not fix it."""
    return statement["Resource"][0].split(":")[4]


def catalog(**versions: str | None) -> EksAddons:
    """An add-on catalog for 1.35: every add-on pinned, except as `versions` says (null: unconfirmed)."""
    pins = {}
    for name in EksAddons.NAMES:
        version = versions.get(name.replace("-", "_"), "v1.0.0-eksbuild.1")
        pins[name] = (AddonPin(version=version, source="a test") if version
                      else AddonPin(version=None, unconfirmed="read it with describe-addon-versions"))
    return EksAddons(kubernetes={"1.35": pins})


def test_a_real_run_refuses_addons_without_a_version(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("components.clouds.aws.eks_addons.load_eks_addons", lambda: catalog(vpc_cni=None))
    monkeypatch.setattr(runtime, "running_offline", lambda: True)  # as under the offline engine
    refuse_unpinned_addons("1.35")  # offline: the plan goes on
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    monkeypatch.setattr(pulumi.runtime, "is_dry_run", lambda: False)  # `pulumi up`, not a preview
    with pytest.raises(pulumi.RunError) as refused:
        refuse_unpinned_addons("1.35")
    message = str(refused.value)
    assert "gpufleet/catalog/eks_addons.yaml kubernetes.1.35: 1 add-on(s)" in message
    assert "vpc-cni: read it with describe-addon-versions" in message and "nothing was created" in message


def test_only_a_minor_with_an_unpinned_addon_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    pinned, unpinned = catalog().kubernetes["1.35"], catalog(coredns=None).kubernetes["1.35"]
    monkeypatch.setattr("components.clouds.aws.eks_addons.load_eks_addons",
                        lambda: EksAddons(kubernetes={"1.35": pinned, "1.34": unpinned}))
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    monkeypatch.setattr(pulumi.runtime, "is_dry_run", lambda: False)  # `pulumi up`, not a preview
    assert refuse_unpinned_addons("1.35") is None
    with pytest.raises(pulumi.RunError, match=r"kubernetes\.1\.34: 1 add-on\(s\).*coredns"):
        refuse_unpinned_addons("1.34")


def test_the_refusal_comes_before_any_resource(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gpufleet.program as program

    monkeypatch.setattr("components.clouds.aws.eks_addons.load_eks_addons", lambda: catalog(coredns=None))
    monkeypatch.setattr(program, "refuse_unbaked_image", lambda cluster: None)  # the VM profile is unbaked too
    monkeypatch.setattr(program, "refuse_placeholders", lambda prepared: None)  # and the alarm address a placeholder
    monkeypatch.setattr(runtime, "running_offline", lambda: False)
    seen = registered_types(monkeypatch)
    with pytest.raises(SpecInvalid, match="eks_addons.yaml kubernetes.1.35: 1 add-on.*coredns"):
        plan_stack(write_stack(tmp_path, "eks", eks_cluster()))
    assert seen == ["pulumi:pulumi:Stack", "gpufleet:aws:Cluster"]  # the stack and the cluster component only


def test_the_catalog_refuses_a_version_without_a_source() -> None:
    with pytest.raises(ValueError, match="version needs source"):
        AddonPin(version="v1.0.0-eksbuild.1")
    with pytest.raises(ValueError, match="say in `unconfirmed`"):
        AddonPin(version=None)
    with pytest.raises(ValueError, match="list exactly"):
        EksAddons(kubernetes={"1.35": {"vpc-cni": AddonPin(version=None, unconfirmed="read it")}})


def test_a_version_without_addons_in_the_catalog_is_refused_naming_the_field(tmp_path: Path) -> None:
    cluster = eks_cluster()
    cluster["scheduler"]["version"] = "1.34"  # offered by EKS, not pinned in eks_addons.yaml
    with pytest.raises(SpecInvalid, match=r"scheduler\.version: .*eks_addons\.yaml has no add-on versions for "
                                          r"Kubernetes 1\.34"):
        plan_stack(write_stack(tmp_path, "old", cluster))
