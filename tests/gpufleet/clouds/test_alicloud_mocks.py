"""The offline engine's Alibaba Cloud answers: ids in the provider's shapes, deterministic, fed where used."""

from __future__ import annotations

import re

from conftest import shipped_plan

from gpufleet.clouds.alicloud import mock_answers as mocks

SHAPES = {
    "alicloud:vpc/network:Network": r"^vpc-[0-9a-z]{21}$",
    "alicloud:vpc/switch:Switch": r"^vsw-[0-9a-z]{21}$",
    "alicloud:ecs/securityGroup:SecurityGroup": r"^sg-[0-9a-z]{21}$",
    "alicloud:ess/scalingGroup:ScalingGroup": r"^asg-[0-9a-z]{21}$",
    "alicloud:ess/scalingConfiguration:ScalingConfiguration": r"^asc-[0-9a-z]{21}$",
    "alicloud:ecs/ecsLaunchTemplate:EcsLaunchTemplate": r"^lt-[0-9a-z]{21}$",
    "alicloud:kms/key:Key": r"^key-[0-9a-z]{24}$",
}


def test_ids_have_their_resource_prefix_and_repeat_exactly() -> None:
    for typ, shape in SHAPES.items():
        physical, _ = mocks.new_resource(typ, "train-x", {}, "cn-beijing")
        assert re.match(shape, physical), (typ, physical)
        assert mocks.new_resource(typ, "train-x", {}, "cn-beijing")[0] == physical


def test_snat_entries_get_the_nat_gateways_snat_table_and_the_eip_address() -> None:
    plan = shipped_plan("alicloud-infer-gn7i")
    entries = [r for r in plan.resources if r.type == "alicloud:vpc/snatEntry:SnatEntry"]
    assert entries and all(e.inputs["snatTableId"].startswith("stb-") for e in entries)
    assert all(re.match(r"^\d+\.\d+\.\d+\.\d+$", e.inputs["snatIp"]) for e in entries)


def test_ram_role_arn_uses_the_lower_case_role_name() -> None:
    _, outputs = mocks.new_resource("alicloud:ram/role:Role", "r", {"roleName": "Train-Node"}, "cn-beijing")
    assert outputs["arn"] == f"acs:ram::{mocks.ACCOUNT}:role/train-node"


def test_invokes_answer_caller_identity_and_zones_only() -> None:
    identity = mocks.invoke("alicloud:index/getCallerIdentity:getCallerIdentity", "cn-beijing", ["cn-beijing-h"])
    assert identity is not None and re.match(r"^\d{16}$", identity["accountId"])
    zones = mocks.invoke("alicloud:index/getZones:getZones", "cn-beijing", ["cn-beijing-h"])
    assert zones is not None and zones["ids"] == ["cn-beijing-h"]
    assert mocks.invoke("alicloud:index/getRegions:getRegions", "cn-beijing", []) is None


def test_no_module_outside_the_alicloud_folders_imports_alicloud_code() -> None:
    from conftest import REPO
    from test_clouds import _imports

    own = (REPO / "components" / "clouds" / "alicloud", REPO / "policies" / "alicloud")
    offenders = [
        str(path.relative_to(REPO))
        for path in [*REPO.glob("components/**/*.py"), *REPO.glob("policies/**/*.py")]
        if not any(path.is_relative_to(folder) for folder in own)
        and any(m.startswith(("pulumi_alicloud", "components.clouds.alicloud", "policies.alicloud"))
                for m in _imports(path))
    ]
    assert offenders == []


def test_oos_template_id_is_its_name_and_nothing_is_made_up_beside_it() -> None:
    inputs = {"templateName": "gpufleet-train-scale-out-gate", "content": "{}"}
    assert mocks.new_resource("alicloud:oos/template:Template", "t", inputs, "cn-beijing") == (
        "gpufleet-train-scale-out-gate", {})
