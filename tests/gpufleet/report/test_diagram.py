"""The Markdown report draws the cluster as a Mermaid flowchart, checked by Mermaid's own parser under node
(tests/mermaid): every shipped cluster stack's diagram parses and names each node group with its type and fabric; a
crafted label full of quotes and brackets parses and reads back whole; a broken diagram is refused."""

from __future__ import annotations

import re
from typing import Any

from conftest import SHIPPED_STACKS, read_cluster, shipped_plan
from mermaid_parser import mermaid_verdicts

from gpufleet.report.diagram import cluster_diagram, label

FENCE = re.compile(r"```mermaid\n(.*?)\n```", re.S)
CRAFTED = 'say "hi" [x] {y} (z) <b>#1; `end` | a --> b; %% c & d'


def decoded(quoted: str) -> str:
    """A label as Mermaid shows it: its numeric entities read back."""
    return re.sub(r"#(\d+);", lambda m: chr(int(m.group(1))), quoted[1:-1])


def cluster_plans(shipped_plans: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: plan.to_json() for name, plan in shipped_plans.items() if plan.summary["node_groups"]}


def test_every_shipped_cluster_diagram_parses_and_names_its_groups(shipped_plans: dict[str, Any]) -> None:
    plans = cluster_plans(shipped_plans)
    assert len(plans) >= 10
    diagrams = {name: cluster_diagram(plan) for name, plan in plans.items()}
    for (name, diagram), verdict in zip(diagrams.items(), mermaid_verdicts(list(diagrams.values())), strict=True):
        assert verdict == {"ok": True, "type": "flowchart-v2"}, (name, verdict, diagram)
        for group in plans[name]["summary"]["node_groups"]:
            heading = label(f"node group {group['name']}")
            assert re.search(rf"subgraph n\d+\[{re.escape(heading)}\]", diagram), (name, diagram)
            assert f"{group['instance_type']}, {group['capacity']}, min {group['size']['min']}" in diagram
        for group in read_cluster(name).get("node_groups", []):  # the stack file's own sizes, not the summary's reading
            if "size" in group:
                assert f"max {group['size']['max']}" in diagram


def test_the_fabric_storage_keys_and_endpoints_are_drawn(shipped_plans: dict[str, Any]) -> None:
    plans = cluster_plans(shipped_plans)
    p5 = cluster_diagram(plans["aws-train-p5"])
    assert "fabric EFA x32, placement group train-h100-pg (cluster)" in p5
    assert "shared file system train-shared" in p5 and '-.->|"encrypts disks"|' in p5
    nd = cluster_diagram(plans["azure-train-ndh100"])
    assert "fabric InfiniBand x8, scale set train-h100-vmss (one placement group)" in nd
    assert "fabric eRDMA x2" in cluster_diagram(plans["alicloud-train-ebmgn8v"])
    eks = cluster_diagram(plans["aws-train-eks"])
    assert 'API server train-eks-eks: public endpoint yes, private endpoint yes, public ranges 203.0.113.0/24"])' in eks


def test_the_markdown_report_carries_the_diagram() -> None:
    from gpufleet.plan.batch import StackOutcome
    from gpufleet.report.markdown import stack_section

    path = SHIPPED_STACKS / "Pulumi.azure-train-aks.yaml"
    plan = shipped_plan("azure-train-aks")
    section = stack_section(StackOutcome(plan.stack, path, plan.exit_code, plan.to_json(), None), {})
    [diagram] = FENCE.findall(section)
    assert mermaid_verdicts([diagram]) == [{"ok": True, "type": "flowchart-v2"}]


def test_a_crafted_label_parses_and_reads_back_whole() -> None:
    quoted = label(CRAFTED)
    assert decoded(quoted) == CRAFTED
    plan = {"resources": [{"urn": f"urn:pulumi:s::p::aws:ec2/subnet:Subnet::{CRAFTED}", "type": "aws:ec2/subnet:Subnet",
                           "parent": None, "inputs": {"cidrBlock": "10.0.0.0/24"}, "property_dependencies": {}}],
            "summary": {"node_groups": [{"name": "g", "instance_type": CRAFTED, "capacity": "spot", "fabric": "efa",
                                         "interfaces": 1, "size": {"min": 0, "desired": 1, "max": 2}}]}}
    drawn = cluster_diagram(plan)
    raw = f"flowchart LR\n  a[\"{CRAFTED}\"]"  # the same text unescaped breaks the diagram
    verdicts = mermaid_verdicts([drawn, raw])
    assert verdicts[0] == {"ok": True, "type": "flowchart-v2"}, drawn
    assert verdicts[1]["ok"] is False


def test_a_broken_diagram_is_refused(shipped_plans: dict[str, Any]) -> None:
    diagram = cluster_diagram(cluster_plans(shipped_plans)["aws-train-p5"])
    broken = diagram.replace("\n  end", "", 1)  # the network subgraph never closes
    [verdict] = mermaid_verdicts([broken])
    assert verdict["ok"] is False and "Parse error" in verdict["error"]
