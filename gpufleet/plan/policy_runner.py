"""Run the CrossGuard rules of `policies/` over recorded resources, as the Pulumi CLI's analyzer would.

The same policy objects the pack serves are called with the SDK's own argument types: one
ResourceValidationArgs per resource per resource policy, one StackValidationArgs per stack policy, with
properties wrapped in the SDK's unknown-checking proxy. Levels and properties come from a config of the
`--policy-pack-config` shape: {"all": LEVEL, "<policy>": LEVEL | {"enforcementLevel": LEVEL, ...}}.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from inspect import isawaitable
from typing import Any

from pulumi_policy import (
    Policy,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.policy import _NotApplicableError  # the SDK exposes no public name for not_applicable
from pulumi_policy.proxy import UnknownValueError, unknown_checking_proxy

from ..pack_config.settings import resolve_config
from .record import RecordedResource


@dataclass(frozen=True, order=True)
class Violation:
    policy: str
    level: str
    urn: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"policy": self.policy, "level": self.level, "urn": self.urn, "message": self.message}


@dataclass
class PolicyReport:
    evaluated: int
    violations: list[Violation] = field(default_factory=list)
    not_applicable: list[tuple[str, str]] = field(default_factory=list)

    @property
    def has_mandatory(self) -> bool:
        return any(v.level == "mandatory" for v in self.violations)

    def to_json(self) -> dict[str, Any]:
        return {"evaluated": self.evaluated, "violations": [v.to_json() for v in self.violations]}


def _options(resource: RecordedResource) -> PolicyResourceOptions:
    return PolicyResourceOptions(
        protect=resource.protect,
        ignore_changes=list(resource.ignore_changes),
        delete_before_replace=None,
        aliases=[],
        custom_timeouts=PolicyCustomTimeouts(0, 0, 0),
        additional_secret_outputs=[],
        parent=resource.parent,
    )


def _stack_resources(resources: Sequence[RecordedResource], props: Any, options: Any) -> list[PolicyResource]:
    built = {
        r.urn: PolicyResource(
            r.type,
            props(r),
            r.urn,
            r.name,
            options(r),
            None,
            None,
            [],
            {},
        )
        for r in resources
    }
    for r in resources:
        node = built[r.urn]
        node.parent = built.get(r.parent) if r.parent else None
        node.dependencies = [built[urn] for urn in r.depends_on if urn in built]
        node.property_dependencies = {
            key: [built[urn] for urn in urns if urn in built] for key, urns in r.property_dependencies.items()
        }
    return list(built.values())


def _run(result: Any) -> None:
    # As the SDK does: a fresh event loop per awaitable validation.
    if isawaitable(result):
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(result)
        finally:
            loop.close()


def run_policies(
    resources: Sequence[RecordedResource],
    config: Mapping[str, Any] | None,
    policies: Sequence[Policy] | None = None,
) -> PolicyReport:
    """Evaluate `policies` (default: the whole pack) over `resources`.

    Raises PolicyConfigError when `config` is malformed.
    """
    from policies.props import shared_reads
    from policies.registry import ALL_POLICIES, declared_types

    if policies is None:
        policies = ALL_POLICIES
    settings = resolve_config(policies, config)
    # Each resource's inputs are proxied once, its options made once and the stack view built once, not per policy,
    # and within shared_reads the plain views the pack's rules take of them are too: rules only read them. The
    # proxy rebuilds every dict and list, so no rule holds the recorded inputs. A pack rule sees only the resource
    # types it declares (it ignores the rest).
    proxied: dict[str, Any] = {}
    options_of: dict[str, PolicyResourceOptions] = {}

    def props(resource: RecordedResource) -> Any:
        if resource.urn not in proxied:
            proxied[resource.urn] = unknown_checking_proxy(resource.inputs)
        return proxied[resource.urn]

    def options(resource: RecordedResource) -> PolicyResourceOptions:
        if resource.urn not in options_of:
            options_of[resource.urn] = _options(resource)
        return options_of[resource.urn]

    stack_view: list[PolicyResource] = []
    report = PolicyReport(evaluated=0)
    violations: list[Violation] = []
    with shared_reads():
        for policy in policies:
            setting = settings[policy.name]
            if setting.level == "disabled":
                continue
            # As in the SDK: a violation left after remediation counts as mandatory.
            level = "mandatory" if setting.level == "remediate" else setting.level
            report.evaluated += 1

            def reporter(default_urn: str, name: str = policy.name, level: str = level) -> Any:
                def report_violation(message: str, urn: str | None = None) -> None:
                    violations.append(Violation(name, level, urn or default_urn, message))

                return report_violation

            if isinstance(policy, ResourceValidationPolicy):
                wanted = declared_types(policy)
                for resource in resources:
                    if wanted is not None and resource.type not in wanted:
                        continue
                    args = ResourceValidationArgs(
                        resource.type,
                        props(resource),
                        resource.urn,
                        resource.name,
                        options(resource),
                        None,
                        copy.deepcopy(setting.properties),
                    )
                    _call(policy, args, reporter(resource.urn), report, violations, resource.urn)
            elif isinstance(policy, StackValidationPolicy):
                stack_view = stack_view or _stack_resources(resources, props, options)
                args = StackValidationArgs(stack_view, copy.deepcopy(setting.properties))
                _call(policy, args, reporter(""), report, violations, "")
    report.violations = sorted(violations, key=lambda v: (v.policy, v.urn, v.message, v.level))
    report.not_applicable = sorted(set(report.not_applicable))
    return report


def _call(
    policy: Policy,
    args: Any,
    report_violation: Any,
    report: PolicyReport,
    violations: list[Violation],
    urn: str,
) -> None:
    try:
        _run(policy.validate(args, report_violation))  # type: ignore[attr-defined]
    except _NotApplicableError as exc:
        report.not_applicable.append((policy.name, exc.reason or ""))
    except UnknownValueError as exc:
        # The SDK turns this into an advisory diagnostic rather than failing the run.
        violations.append(
            Violation(policy.name, "advisory", urn, f"can't run policy during preview: {exc.message}")
        )

