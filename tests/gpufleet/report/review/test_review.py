"""The plan says what its resources will do (issue 41 item 5): with `admin_cidrs: [8.8.8.0/24]` the SSH opening is
printed with its range on every cloud, in the table at 80 and 120 columns and in the Markdown report; grants are
summarised per identity, sizes come from the stack file, and `gpufleet diff` of a new stack shows the same inputs."""

from __future__ import annotations

import importlib
import io
from pathlib import Path
from typing import Any

import pytest
from conftest import SHIPPED_STACKS, read_cluster, shipped_plan, write_stack
from rich.console import Console
from slurm_stacks import slurm_cluster
from typer.testing import CliRunner

from gpufleet import cli
from gpufleet.plan.compare import Side, diff_stack
from gpufleet.plan.diff_refs import DiffReport
from gpufleet.plan.planner import plan_stack
from gpufleet.report.diff_view import markdown_diff, print_diff
from gpufleet.report.review import review

cli_app = importlib.import_module("gpufleet.cli.app")

ADMIN = "8.8.8.0/24"
SSH = f"allow tcp 22 from {ADMIN}"
REGION_KEY = {"aws": "aws:region", "azure": "azure-native:location", "alicloud": "alicloud:region"}
TEMPLATES = {"aws": "aws-train-p5", "azure": "azure-train-ndh100", "alicloud": "alicloud-train-ebmgn8v"}


def admin_stack(directory: Path, cloud: str) -> Path:
    """A fork of the cloud's training template that opens SSH to one public /24."""
    template = TEMPLATES[cloud]
    cluster = read_cluster(template)
    path = directory / f"Pulumi.ssh-{cloud}.yaml"
    path.write_text(f"config:\n  {REGION_KEY[cloud]}: {cluster['region']}\n  gpufleet:cluster:\n"
                    f"    extends: {template}\n    network:\n      admin_cidrs: [{ADMIN}]\n")
    return path


@pytest.fixture(autouse=True)
def _console_width_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_app.out, "_width", None)


def printed(columns: int, *args: str) -> str:
    cli_app.out.width = columns
    result = CliRunner().invoke(cli.app, list(args), env={"COLUMNS": str(columns)})
    assert result.exit_code in (0, 1), result.output
    return result.stdout


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("cloud", sorted(TEMPLATES))
def test_the_ssh_opening_is_printed_with_its_range(tmp_path: Path, cloud: str, columns: int) -> None:
    path = admin_stack(tmp_path, cloud)
    table = printed(columns, "plan", "--stack-file", str(path), "--stacks-dir", str(SHIPPED_STACKS))
    assert "Ingress: who can reach what" in table
    assert any(SSH in line for line in table.splitlines()), table
    assert "…" not in table and max(len(line) for line in table.splitlines()) <= columns
    markdown = printed(columns, "plan", "--stack-file", str(path), "--stacks-dir", str(SHIPPED_STACKS),
                       "--format", "markdown")
    assert any(row.startswith("| ingress |") and SSH in row for row in markdown.splitlines()), markdown


def test_without_admin_ranges_nothing_opens_from_outside() -> None:
    plan = shipped_plan("aws-train-p5").to_json()
    openings = [line.detail for line in review(plan["resources"]) if line.concern == "ingress"]
    assert openings and not any("tcp 22" in detail for detail in openings)


def lines_of(stack: str) -> dict[str, list[tuple[str, str]]]:
    plan = shipped_plan(stack).to_json()
    found: dict[str, list[tuple[str, str]]] = {}
    for line in review(plan["resources"]):
        found.setdefault(line.concern, []).append((line.subject, line.detail))
    return found


def size_words(stack: str) -> str:
    size = read_cluster(stack)["node_groups"][0]["size"]
    return f"min {size['min']}, desired {size['desired']}, max {size['max']}"


def test_aws_grants_per_role_and_the_group_size_as_written() -> None:
    found = lines_of("aws-train-p5")
    node_role = [detail for subject, detail in found["grants"] if subject == "train-node-role"]
    assert "assumed by Service ec2.amazonaws.com" in node_role
    assert "managed policy AmazonSSMManagedInstanceCore" in node_role
    assert any("allow autoscaling:CompleteLifecycleAction, autoscaling:RecordLifecycleActionHeartbeat on" in d
               for d in node_role)
    assert any(s == "train-h100-asg" and d.startswith(size_words("aws-train-p5")) and "types p5.48xlarge" in d
               for s, d in found["sizes"])
    root_gb = read_cluster("aws-train-p5")["storage"]["root_volume_gb"]
    assert any(s == "train-h100-lt" and f"disk GB {root_gb}" in d and "efa-only x31" in d for s, d in found["sizes"])
    assert any(s == "train-h100-asg" and "spot" not in d for s, d in found["sizes"])  # sizes say sizes only


def test_azure_role_assignments_by_role_name_and_scope() -> None:
    found = lines_of("azure-train-aks")
    assert ("train-aks-disk-des", "Key Vault Crypto Service Encryption User on train-aks-disk-disks") in found["grants"]
    assert ("train-aks-aks", "private API server no, API server ranges 203.0.113.0/24, node public IPs no") in found[
        "exposure"]
    group = read_cluster("azure-train-aks")["node_groups"][0]["size"]
    assert any(s == "train-aks-h100" and f"min {group['min']}" in d and f"max {group['max']}" in d
               for s, d in found["sizes"])


def test_alicloud_ram_policies_per_role() -> None:
    found = lines_of("alicloud-train-ebmgn8v")
    node_role = [detail for subject, detail in found["grants"] if subject == "train-node-role"]
    assert "assumed by Service ecs.aliyuncs.com" in node_role
    assert any(d.startswith("allow cms:PutCustomMetric on *; allow ess:SetInstanceHealth on acs:ess:")
               for d in node_role)
    gate = [detail for subject, detail in found["grants"] if subject == "train-scale-out-gate-role"]
    assert any(d.endswith("allow ess:CompleteLifecycleAction on *") for d in gate)
    assert any(s == "train-h20-asg" and d.startswith(size_words("alicloud-train-ebmgn8v")) for s, d in found["sizes"])


def test_the_eks_endpoint_and_pod_identities_are_shown() -> None:
    found = lines_of("aws-train-eks")
    assert ("train-eks-eks", "public endpoint yes, private endpoint yes, public ranges 203.0.113.0/24") in found[
        "exposure"]
    assert ("train-eks-vpc-cni", "assumed by pods of service account aws-node (add-on vpc-cni)") in found["grants"]
    assert ("train-eks-cluster-autoscaler", "assumed by pods of service account kube-system/cluster-autoscaler") \
        in found["grants"]


def last_cells(text: str) -> list[str]:
    """The text of the last column of a rich table, one entry per printed line."""
    return [line.split("│")[-2].strip() for line in text.splitlines() if line.count("│") > 2]


def added_stack_diff(tmp_path: Path) -> DiffReport:
    plan = plan_stack(admin_stack(tmp_path, "aws"), SHIPPED_STACKS).to_json()
    return DiffReport("main", "0" * 40, [diff_stack("ssh-aws", Side("absent"), Side("planned", 0, plan))])


@pytest.mark.parametrize("columns", [80, 120])
def test_diff_of_a_new_stack_shows_what_its_resources_will_do(tmp_path: Path, columns: int) -> None:
    report = added_stack_diff(tmp_path)
    console = Console(width=columns, record=True, color_system=None, file=io.StringIO())
    print_diff(console, report)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= columns and "…" not in text
    assert SSH in " ".join(last_cells(text)), text  # a cell may wrap: its lines read in order
    assert any("train-h100-asg" in line and "sizes" in line for line in text.splitlines())
    markdown = markdown_diff(report)
    rows = [row for row in markdown.splitlines() if row.startswith("| + |")]
    assert any("| train-nodes | ingress | (none) |" in row and SSH in row for row in rows), markdown
    assert any("| train-h100-asg | sizes | (none) | " + size_words("aws-train-p5") in row for row in rows)
    assert any("| train-node-role | grants | (none) | assumed by Service ec2.amazonaws.com |" in row for row in rows)


def test_a_secret_input_stays_masked_in_the_review() -> None:
    secret: dict[str, Any] = {"urn": "urn:pulumi:s::p::aws:iam/rolePolicy:RolePolicy::r", "parent": None,
                              "type": "aws:iam/rolePolicy:RolePolicy", "property_dependencies": {},
                              "inputs": {"policy": "[secret]", "role": "r"}}
    assert review([secret]) == []  # a masked document says nothing, rather than a guess


def test_the_slurm_head_node_is_named_with_its_type_disk_and_any_public_ip() -> None:
    head: dict[str, Any] = {
        "urn": "urn:pulumi:s::gpufleet::gpufleet:aws:Cluster$aws:ec2/instance:Instance::train-dev-slurm-head",
        "parent": None, "type": "aws:ec2/instance:Instance", "property_dependencies": {},
        "inputs": {"instanceType": "m7i.xlarge", "availabilityZone": "us-east-1a", "associatePublicIpAddress": False,
                   "rootBlockDevice": {"volumeSize": 100, "volumeType": "gp3", "encrypted": True}}}
    assert [(line.concern, line.subject, line.detail) for line in review([head])] == [
        ("sizes", "train-dev-slurm-head", "type m7i.xlarge, zone us-east-1a, disk GB 100, disk type gp3")]
    public = {**head, "inputs": {**head["inputs"], "associatePublicIpAddress": True}}
    assert ("exposure", "public IP yes") in [(line.concern, line.detail) for line in review([public])]


def test_the_azure_slurm_head_is_sized_and_its_openings_name_the_nodes_group(tmp_path: Path) -> None:
    plan = plan_stack(write_stack(tmp_path, "slurm-ndh100", slurm_cluster("azure-train-ndh100")), tmp_path).to_json()
    lines = [(line.concern, line.subject, line.detail) for line in review(plan["resources"])]
    assert ("sizes", "train-dev-slurm-head", "type Standard_D4ds_v5, zones 1, OS disk GB 100") in lines
    assert ("ingress", "train-dev-slurm-head", "allow tcp 6817 from application security group "
            "train-dev-slurm-nodes (slurmctld from the GPU nodes)") in lines
    assert not [line for line in lines if line[0] == "exposure" and line[1] == "train-dev-slurm-head"]
    nic = next(r for r in plan["resources"] if r["type"] == "azure-native:network:NetworkInterface")
    nic["inputs"]["ipConfigurations"][0]["publicIPAddress"] = {"id": "pip"}
    assert ("exposure", "train-dev-slurm-head", "public IP pip") in [
        (line.concern, line.subject, line.detail) for line in review([nic])]
