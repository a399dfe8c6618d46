"""The per-cloud seam: one cloud list, a backend per cloud, per-cloud stack models, limits as data, resolve once."""

from __future__ import annotations

import ast
import copy
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, read_cluster

from gpufleet.catalog import load_catalog
from gpufleet.clouds.lookup import backend, cloud_of_resource_type
from gpufleet.clouds.program import cloud_program
from gpufleet.clouds.registry import CLOUDS
from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile import SpecInvalid

# The modules the backend and program protocols are built from: every cloud's application folder has them.
SEAM_MODULES = {"__init__.py", "backend.py", "checks.py", "stack_model.py", "names.py", "program.py", "mock_answers.py"}


def cloud_folders(cloud: str) -> tuple[Path, ...]:
    """The folders that hold a cloud's code: its components, its application part, its preflight part, its rules."""
    tops = ("components/clouds", "gpufleet/clouds", "gpufleet/preflight", "policies")
    return tuple(REPO / top / cloud for top in tops)


# The self-run Cluster Autoscaler is AWS's (AKS and ACK run their clouds' own): its module may read AWS's hold.
AWS_ONLY = (*cloud_folders("aws"), REPO / "components" / "kubernetes" / "autoscaler.py")


def azure_cluster(**network: Any) -> dict[str, Any]:
    raw = copy.deepcopy(read_cluster("aws-train-p5"))
    raw.update(cloud="azure", region="eastus", image="cuda12.8-r580")
    raw.pop("identity")
    raw["network"] = {"cidr": "10.20.0.0/16", "zones": ["1"], **network}
    raw["node_groups"][0].update(instance_types=["Standard_ND96isr_H100_v5"], capacity="on-demand", on_demand_base=0)
    return raw


def errors_of(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecInvalid) as caught:
        resolve_cluster(raw)
    return [str(error) for error in caught.value.errors]


@pytest.mark.parametrize("cloud", CLOUDS)
def test_every_cloud_has_a_folder_with_the_seam_modules_and_a_backend(cloud: str) -> None:
    folder = REPO / "gpufleet" / "clouds" / cloud
    assert SEAM_MODULES <= {path.name for path in folder.glob("*.py")}
    registered = backend(cloud)
    assert registered.name == cloud
    assert registered.spec_model.model_fields["cloud"].annotation.__args__ == (cloud,)
    assert registered.images_model.model_fields["cloud"].annotation.__args__ == (cloud,)
    assert cloud_of_resource_type(f"{registered.provider}:some/type:Type") == cloud
    program = cloud_program(cloud)
    assert all(callable(getattr(program, name)) for name in ("build_cluster", "build_images", "mock_resource",
                                                             "mock_invoke"))


def test_unknown_cloud_is_refused_with_the_list() -> None:
    raw = read_cluster("aws-train-p5") | {"cloud": "gcp"}
    assert errors_of(raw) == ["cloud: unknown value; use one of: aws, azure, alicloud"]


def test_an_aws_field_on_an_azure_stack_is_refused_by_name() -> None:
    errors = errors_of(azure_cluster(vpc_id="vpc-0123456789abcdef0"))
    assert ("network.vpc_id: unknown field; check its spelling against `gpufleet schema`; did you mean 'vnet_id'?"
            in errors)
    raw = azure_cluster()
    raw["identity"] = {"s3_read_prefixes": []}
    assert "identity.s3_read_prefixes: unknown field; check its spelling against `gpufleet schema`" in errors_of(raw)


def test_brought_network_names_the_clouds_own_fields() -> None:
    raw = azure_cluster()
    del raw["network"]["cidr"]
    assert "network: set network.cidr to create a network, or bring one with vnet_id / subnet_id" in errors_of(raw)
    both = azure_cluster(vnet_id="/subscriptions/x/vnet", subnet_id="/subscriptions/x/subnet")
    assert "network: set either network.cidr or vnet_id, subnet_id, not both" in errors_of(both)


def test_azure_ib_limits_come_from_catalog_data_with_a_source() -> None:
    catalog = load_catalog()
    assert catalog.limit("azure", "ib_scale_set_max_vms") == 100
    raw = azure_cluster()
    raw["network"]["cidr"] = "172.16.0.0/12"
    raw["node_groups"][0]["size"] = {"min": 0, "desired": 1, "max": 101}
    errors = errors_of(raw)
    assert any(e.startswith("node_groups[0].size.max: InfiniBand reaches only inside one scale set") for e in errors)
    overlap = "network.cidr: 172.16.0.0/12 overlaps 172.16.0.0/16, which the InfiniBand network reserves; move it"
    assert overlap in errors


def test_capacity_block_exists_on_aws_only() -> None:
    raw = azure_cluster()
    raw["node_groups"][0].update(capacity="capacity-block", reservation_id="cr-0123456789abcdef0")
    assert any(e.startswith("node_groups[0].capacity: capacity capacity-block does not exist on azure")
               for e in errors_of(raw))


@pytest.mark.parametrize("cloud", CLOUDS)
def test_every_cloud_publishes_its_limits_with_sources(cloud: str) -> None:
    path = REPO / "gpufleet" / "catalog" / "data" / f"{cloud}.yaml"
    assert "subnet_reserved_addresses:" in path.read_text()
    assert isinstance(load_catalog().limit(cloud, "user_data_max_bytes"), int)


def test_resolve_derives_fabric_zones_and_names_once() -> None:
    resolved = resolve_cluster(read_cluster("aws-train-p5"))
    (group,) = resolved.groups
    assert (group.rdma, group.fabric, group.interfaces) == (True, "efa", 32)
    assert group.zones == ("us-east-1a",)
    assert group.names["scaling_group"] == "gpufleet-train-dev-h100"
    assert [t.name for t in group.known_types] == ["p5.48xlarge"]


def test_rdma_off_group_uses_every_zone_and_no_fabric() -> None:
    raw = read_cluster("aws-train-p5")
    raw["network"]["zones"] = ["us-east-1a", "us-east-1b"]
    raw["node_groups"][0]["rdma"] = "off"
    (group,) = resolve_cluster(raw).groups
    assert (group.rdma, group.fabric, group.interfaces, group.zones) == (False, "none", 0, ("us-east-1a", "us-east-1b"))


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    package = ".".join(path.relative_to(REPO).with_suffix("").parts[:-1])
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            module = f"{base}.{node.module}" if node.level and node.module else (node.module or base)
            found.add(module)
            found |= {f"{module}.{alias.name}" for alias in node.names}
    return found


# Per cloud: the folders that may import its code, and the module prefixes that are its code.
CLOUD_ONLY = {
    "aws": (AWS_ONLY, ("pulumi_aws", "components.clouds.aws", "gpufleet.clouds.aws", "policies.aws")),
    "azure": (
        cloud_folders("azure"),
        ("pulumi_azure_native", "components.clouds.azure", "gpufleet.clouds.azure", "policies.azure"),
    ),
}


@pytest.mark.parametrize("cloud", sorted(CLOUD_ONLY))
def test_no_module_outside_a_clouds_folders_imports_its_code(cloud: str) -> None:
    folders, prefixes = CLOUD_ONLY[cloud]
    offenders = []
    for path in [*REPO.glob("gpufleet/**/*.py"), *REPO.glob("components/**/*.py"), *REPO.glob("policies/**/*.py")]:
        if any(path.is_relative_to(folder) for folder in folders):
            continue
        found = [m for m in _imports(path) if m.startswith(prefixes)]
        if found:
            offenders.append(f"{path.relative_to(REPO)}: {sorted(found)}")
    assert offenders == []


def test_a_plan_parses_the_lock_once_and_validates_the_stack_once(monkeypatch) -> None:
    import gpufleet.lock.loader as loader
    import gpufleet.prepare as prepare
    from gpufleet.plan.planner import plan_stack

    parsed: list[object] = []
    resolved: list[object] = []
    real_load, real_resolve = loader.load_yaml_model, prepare.resolve_cluster
    monkeypatch.setattr(loader, "_LOADED", {})
    monkeypatch.setattr(
        loader, "load_yaml_model", lambda path, model, **kw: parsed.append(path) or real_load(path, model, **kw)
    )
    monkeypatch.setattr(prepare, "resolve_cluster", lambda raw: resolved.append(raw) or real_resolve(raw))
    plan = plan_stack(REPO / "stacks" / "Pulumi.aws-train-p5.yaml", REPO / "stacks")
    assert plan.policies["evaluated"] > 0
    assert len(parsed) == 1 and len(resolved) == 1


def test_brought_vswitches_match_the_zones_as_subnets_do() -> None:
    raw = copy.deepcopy(read_cluster("aws-train-p5"))
    raw.update(cloud="alicloud", region="cn-wulanchabu")
    raw.pop("identity")
    raw["network"] = {
        "vpc_id": "vpc-0jl1234567890abcdef", "vswitch_ids": ["vsw-a", "vsw-b"], "zones": ["cn-wulanchabu-a"]
    }
    expected = "network.vswitch_ids: list one per zone, in the order of network.zones (1 zones, 2 given)"
    assert expected in errors_of(raw)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"network": {"cidr": "8.8.0.0/16", "zones": ["us-east-1a"]}},
         "network.cidr: 8.8.0.0/16 is not private address space (RFC 1918"),
        ({"network": {"cidr": "10.0.0.0/12", "zones": ["us-east-1a"]}},
         "network.cidr: aws networks take a /16 to /28 prefix, got /12"),
        ({"network": {"cidr": "10.42.0.0/16", "zones": ["us-west-2a"]}},
         "network.zones[0]: 'us-west-2a' is not a zone of us-east-1"),
        ({"network": {"cidr": "10.42.0.0/16", "zones": ["us-east-1a", "us-east-1a"]}},
         "network.zones[1]: 'us-east-1a' is listed twice"),
        ({"tags": {"aws:owner": "x"}}, "tags.aws:owner: keys starting with 'aws:' are reserved by aws"),
        ({"tags": {"team": "x" * 257}}, "tags.team: the value is 257 characters; aws allows 256"),
    ],
)
def test_values_are_checked_against_the_cloud(change: dict[str, Any], expected: str) -> None:
    raw = copy.deepcopy(read_cluster("aws-train-p5")) | change
    assert any(error.startswith(expected) for error in errors_of(raw)), errors_of(raw)


def test_local_zones_and_alibaba_zones_are_recognised() -> None:
    assert re.fullmatch(backend("aws").zone_pattern("us-east-1") or "", "us-east-1-bos-1a")
    assert re.fullmatch(backend("alicloud").zone_pattern("cn-wulanchabu") or "", "cn-wulanchabu-c")
    assert not re.fullmatch(backend("alicloud").zone_pattern("cn-wulanchabu") or "", "cn-beijing-h")
