"""A pod with no node reaches code scanning as a result of its own SARIF rule."""

from __future__ import annotations

from conftest import REPO, SHIPPED_STACKS

from gpufleet.plan.batch import StackOutcome
from gpufleet.plan.schedulable import SCHEDULABLE
from gpufleet.report.sarif import sarif_log

URN = "urn:pulumi:aws-train-eks::gpufleet::kubernetes:apps/v1:Deployment::cluster-autoscaler"


def test_a_pod_with_no_node_is_an_error_of_the_schedulable_rule():
    violation = {"policy": SCHEDULABLE, "level": "mandatory", "urn": URN,
                 "message": "no node admits Deployment kube-system/cluster-autoscaler: h100: taint "
                            "nvidia.com/gpu=present:NoSchedule not tolerated"}
    plan = {"stack": "aws-train-eks", "cloud": "aws", "region": "us-east-1", "resources": [],
            "policies": {"evaluated": 0, "violations": [violation], "exceptions": []}, "summary": {}}
    outcome = StackOutcome("aws-train-eks", SHIPPED_STACKS / "Pulumi.aws-train-eks.yaml", 1, plan, None)
    (run,) = sarif_log([outcome], [], REPO)["runs"]
    (result,) = run["results"]
    rule = run["tool"]["driver"]["rules"][result["ruleIndex"]]
    assert rule["id"] == SCHEDULABLE and rule["defaultConfiguration"]["level"] == "error"
    assert result["level"] == "error" and result["message"]["text"] == f"aws-train-eks: {violation['message']}"
    assert result["locations"][0]["logicalLocations"] == [{"fullyQualifiedName": URN, "kind": "resource"}]
