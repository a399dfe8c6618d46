"""The offline runner: config levels, SDK semantics (awaitables, not_applicable, unknowns), the catalog."""

from __future__ import annotations

import re
import sys

import pytest
from conftest import REPO
from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UNKNOWN_ARRAY_VALUE, UNKNOWN_OBJECT_VALUE, UNKNOWN_STRING_VALUE

from gpufleet.pack_config.settings import PolicyConfigError, resolve_config
from gpufleet.plan.policy_catalog import policy_catalog
from gpufleet.plan.policy_runner import run_policies
from gpufleet.plan.record import RecordedResource
from policies.registry import ALL_POLICIES, RULES, RULES_BY_NAME, rdma_in_use_config

ROOT = REPO
LT = "aws:ec2/launchTemplate:LaunchTemplate"


def template(name: str = "lt", **inputs) -> RecordedResource:
    return RecordedResource(
        urn=f"urn:pulumi:dev::gpufleet::{LT}::{name}",
        type=LT,
        name=name,
        parent=None,
        depends_on=(),
        inputs=inputs,
        custom=True,
    )


IMDS = [RULES_BY_NAME["aws-imdsv2-required"].policy]
BAD = template(metadataOptions={"httpTokens": "optional"})


def test_default_level_is_the_rules_own():
    report = run_policies([BAD], {}, IMDS)
    assert report.evaluated == 1 and report.has_mandatory
    assert report.to_json() == {
        "evaluated": 1,
        "violations": [
            {
                "policy": "aws-imdsv2-required",
                "level": "mandatory",
                "urn": BAD.urn,
                "message": "IMDSv1 stays enabled (metadata_options.http_tokens is 'optional'): set "
                "metadata_options.http_tokens = 'required'",
            }
        ],
    }


def test_advisory_does_not_set_has_mandatory():
    report = run_policies([BAD], {"aws-imdsv2-required": "advisory"}, IMDS)
    assert [v.level for v in report.violations] == ["advisory"] and not report.has_mandatory


def test_all_sets_every_level_and_a_policy_entry_wins():
    assert run_policies([BAD], {"all": "advisory"}, IMDS).violations[0].level == "advisory"
    config = {"all": "advisory", "aws-imdsv2-required": {"enforcementLevel": "mandatory"}}
    assert run_policies([BAD], config, IMDS).has_mandatory


def test_disabled_skips_the_policy():
    report = run_policies([BAD], {"aws-imdsv2-required": {"enforcementLevel": "disabled"}}, IMDS)
    assert report.evaluated == 0 and report.violations == []
    full = run_policies([BAD], {})
    assert run_policies([BAD], {"aws-imdsv2-required": "disabled"}).evaluated == full.evaluated - 1


def test_remediate_reports_as_mandatory():
    assert run_policies([BAD], {"aws-imdsv2-required": "remediate"}, IMDS).violations[0].level == "mandatory"


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            {"aws-imdsv2-required": "blocking"},
            "policy config.aws-imdsv2-required: 'blocking' is not an enforcement",
        ),
        ({"all": "strict"}, "policy config.all: 'strict' is not an enforcement level"),
        ({"no-such-rule": "advisory"}, "policy config.no-such-rule: no such policy in the pack"),
        ({"required-tags": {"keys": "team"}}, "policy config.required-tags.keys: expected array, got str"),
        ({"required-tags": {"keys": [1]}}, "policy config.required-tags.keys: every item must be a string"),
        (
            {"required-tags": {"tags": ["team"]}},
            "policy config.required-tags.tags: required-tags takes no such",
        ),
        (
            {"hourly-budget": {"maxHourlyUsd": True}},
            "policy config.hourly-budget.maxHourlyUsd: expected number",
        ),
        ({"required-tags": 3}, "policy config.required-tags: expected a level or a mapping, got int"),
    ],
)
def test_bad_config_names_the_field(config, expected):
    with pytest.raises(PolicyConfigError, match=re.escape(expected)):
        run_policies([BAD], config)


def test_schema_defaults_and_settings_reach_the_rule():
    settings = resolve_config(ALL_POLICIES, {"required-tags": {"keys": ["team"]}})
    assert settings["required-tags"].properties == {"keys": ["team"]}
    assert settings["aws-efa-interface-count"].properties == {"rdmaInUseInstanceTypes": []}
    assert settings["hourly-budget"].properties == {"budgetRequired": False, "pricesAtLeastCatalog": False}


def test_rdma_in_use_config_feeds_both_count_rules():
    config = rdma_in_use_config(["p5.48xlarge", "p5.48xlarge"])
    assert config == {
        "aws-efa-interface-count": {"rdmaInUseInstanceTypes": ["p5.48xlarge"]},
        "aws-efa-interface-count-advisory": {"rdmaInUseInstanceTypes": ["p5.48xlarge"]},
    }
    lt = template(instanceType="p5.48xlarge", networkInterfaces=[])
    rules = [RULES_BY_NAME[name].policy for name in config]
    assert [(v.policy, v.level) for v in run_policies([lt], config, rules).violations] == [
        ("aws-efa-interface-count", "mandatory")
    ]


def test_awaitable_validation_and_not_applicable_are_handled():
    async def check(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        report_violation(f"async saw {args.props['instanceType']}")

    def skip(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        args.not_applicable("nothing to do")

    policies = [
        ResourceValidationPolicy(
            "async-rule", "async", validate=check, enforcement_level=EnforcementLevel.MANDATORY
        ),
        StackValidationPolicy("skip-rule", "skip", validate=skip),
    ]
    report = run_policies([template(instanceType="p5.48xlarge")], {}, policies)
    assert [(v.policy, v.message) for v in report.violations] == [("async-rule", "async saw p5.48xlarge")]
    assert report.not_applicable == [("skip-rule", "nothing to do")]


def test_unknown_values_read_directly_become_an_advisory_diagnostic():
    def strict(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        if args.props["imageId"] != "ami-0123456789abcdef0":
            report_violation("wrong image")

    policy = ResourceValidationPolicy(
        "strict", "strict", validate=strict, enforcement_level=EnforcementLevel.MANDATORY
    )
    report = run_policies([template(imageId=UNKNOWN_STRING_VALUE)], {}, [policy])
    assert not report.has_mandatory
    assert report.violations[0].level == "advisory"
    assert "string value at .imageId can't be known during preview" in report.violations[0].message


def test_pack_rules_never_fail_on_unknown_values():
    unknown = template(
        instanceType=UNKNOWN_STRING_VALUE,
        imageId=UNKNOWN_STRING_VALUE,
        metadataOptions=UNKNOWN_OBJECT_VALUE,
        blockDeviceMappings=UNKNOWN_ARRAY_VALUE,
        networkInterfaces=UNKNOWN_ARRAY_VALUE,
        tags=UNKNOWN_OBJECT_VALUE,
        userData=UNKNOWN_STRING_VALUE,
    )
    assert run_policies([unknown], {"required-tags": {"keys": ["team"]}}).violations == []


def test_stack_resources_are_linked_to_parents_and_dependencies():
    seen: dict[str, object] = {}

    def inspect(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        by_urn = {r.urn: r for r in args.resources}
        child = by_urn["c"]
        seen["parent"] = child.parent.urn if child.parent else None
        seen["deps"] = [d.urn for d in child.dependencies]
        seen["prop_deps"] = {k: [d.urn for d in v] for k, v in child.property_dependencies.items()}

    resources = [
        RecordedResource("p", "gpufleet:aws:Cluster", "p", None, (), {}, False),
        RecordedResource("d", LT, "d", "p", (), {}, True),
        RecordedResource(
            "c",
            "aws:autoscaling/group:Group",
            "c",
            "p",
            ("d",),
            {},
            True,
            property_dependencies={"launchTemplate": ("d",)},
        ),
    ]
    run_policies(resources, {}, [StackValidationPolicy("inspect", "inspect", validate=inspect)])
    assert seen == {"parent": "p", "deps": ["d"], "prop_deps": {"launchTemplate": ["d"]}}


def test_violations_are_sorted_deterministically():
    resources = [template(f"lt{i}", metadataOptions={"httpTokens": "optional"}) for i in range(5)]
    first = run_policies(resources, {}).to_json()
    assert run_policies(list(reversed(resources)), {}).to_json() == first
    keys = [(v["policy"], v["urn"], v["message"]) for v in first["violations"]]
    assert keys == sorted(keys)


def test_registry_and_catalog():
    catalog = policy_catalog()
    names = [row["name"] for row in catalog]
    assert len(RULES) >= 20 and len(names) == len(set(names)) == len(ALL_POLICIES)
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name) for name in names)
    for row in catalog:
        assert row["level"] in ("advisory", "mandatory")
        assert row["cloud"] in ("aws", "azure", "alicloud", "kubernetes", "any")
        assert row["description"] and row["kind"] in ("resource", "stack")
    assert next(r for r in catalog if r["name"] == "aws-imdsv2-required")["checkov"] == ["CKV_AWS_79"]


def test_readme_lists_every_rule():
    readme = (ROOT / "policies" / "README.md").read_text()
    for row in policy_catalog():
        line = next((ln for ln in readme.splitlines() if ln.startswith(f"| `{row['name']}` |")), None)
        assert line is not None, row["name"]
        assert f"| {row['level']} |" in line


def test_main_builds_the_pack_from_the_registry(monkeypatch):
    import runpy

    import pulumi_policy

    built: dict[str, object] = {}

    def record(**kwargs: object) -> None:
        built.update(kwargs)

    monkeypatch.setattr(pulumi_policy, "PolicyPack", record)
    monkeypatch.setattr(sys, "path", list(sys.path))
    runpy.run_path(str(ROOT / "policies" / "__main__.py"), run_name="__main__")
    assert built["name"] == "gpufleet" and built["policies"] == ALL_POLICIES
    assert str(ROOT) == sys.path[0]


@pytest.mark.parametrize("stack", ["aws-train-p5", "aws-infer-g6e", "alicloud-train-ebmgn8v"])  # with violations
def test_views_shared_across_policies_change_no_verdict(stack):
    # One run shares each resource's plain view among the policies (props.shared_reads); a run per policy
    # builds them afresh, as the Pulumi CLI's analyzer does. A rule that wrote into a view would differ here.
    from gpufleet.pack_config.derive import policy_pack_config
    from gpufleet.plan.planner import plan_stack
    from gpufleet.prepare import prepare
    from gpufleet.stackfile import load_stack

    path = ROOT / "stacks" / f"Pulumi.{stack}.yaml"
    config = load_stack(path, ROOT / "stacks")
    pack_config = policy_pack_config(config, prepare(config), stack)
    resources = plan_stack(path, ROOT / "stacks").resources
    shared = run_policies(resources, pack_config)
    alone = [
        run_policies(resources, {k: v for k, v in pack_config.items() if k in ("all", policy.name)}, [policy])
        for policy in ALL_POLICIES
    ]
    assert shared.violations == sorted(
        (v for report in alone for v in report.violations), key=lambda v: (v.policy, v.urn, v.message, v.level)
    )
    assert shared.violations and shared.evaluated == sum(report.evaluated for report in alone)


def test_shared_reads_build_each_view_once_and_only_inside_the_block():
    from policies.props import once, shared_reads

    source, built = {"a": [1]}, []

    def build():
        built.append(1)
        return dict(source)

    with shared_reads():
        assert once("plain", source, build) is once("plain", source, build)
    assert once("plain", source, build) is not once("plain", source, build)
    assert len(built) == 3
