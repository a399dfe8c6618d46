"""A rule: one CrossGuard policy plus what the catalog says about it (cloud, types read, CIS, Checkov).

`resource_rule` and `stack_rule` build the policy objects from plain check functions: the check sees
plain data (see props.py) and yields messages; the wrapper reports them. The same objects run under the
Pulumi CLI and under the offline runner. A rule's catalog entry is plain data and its policy object is built
from the policy SDK on first use, so listing the rules (`gpufleet policies`) loads neither the SDK nor Pulumi.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from .props import once, plain

if TYPE_CHECKING:
    from pulumi_policy import Policy, ReportViolation, ResourceValidationArgs, StackValidationArgs

# The values of pulumi_policy.EnforcementLevel (pulumi_policy/policy.py); a rule's policy gets the SDK's member.
MANDATORY = "mandatory"
ADVISORY = "advisory"

Props = dict[str, Any]  # a resource's properties as plain data (props.plain)
Config = Mapping[str, Any]  # a rule's settings from the pack config
ResourceCheck = Callable[[str, Props, Config], Iterable[str]]


class NotApplicable(Exception):
    """Raised by a check when the rule does not apply (e.g. no budget configured)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class ConfigSchema:
    """A rule's settings (JSON Schema per property), as pulumi_policy.PolicyConfigSchema carries them."""

    properties: dict[str, dict[str, Any]]


@dataclass(frozen=True, eq=False)  # one object per rule: compared and hashed by identity
class Rule:
    """A rule's catalog entry (plain data) and its policy, built from the SDK when first read."""

    name: str
    description: str
    level: str
    kind: str  # "resource" or "stack"
    cloud: str
    resource_types: tuple[str, ...]
    validate: Callable[..., None] = field(repr=False, compare=False)
    config_schema: ConfigSchema | None = None
    cis: str | None = None
    checkov: tuple[str, ...] = ()

    @cached_property
    def policy(self) -> Policy:
        """The ResourceValidationPolicy or StackValidationPolicy the pack serves; one object per rule."""
        from pulumi_policy import (
            EnforcementLevel,
            PolicyConfigSchema,
            ResourceValidationPolicy,
            StackValidationPolicy,
        )

        kind = StackValidationPolicy if self.kind == "stack" else ResourceValidationPolicy
        schema = PolicyConfigSchema(properties=self.config_schema.properties) if self.config_schema else None
        return kind(name=self.name, description=self.description, validate=self.validate,
                    enforcement_level=EnforcementLevel(self.level), config_schema=schema)


def config_schema(properties: dict[str, dict[str, Any]]) -> ConfigSchema:
    return ConfigSchema(properties)


def resource_rule(
    name: str,
    description: str,
    level: str,
    cloud: str,
    types: Iterable[str],
    check: ResourceCheck,
    *,
    cis: str | None = None,
    checkov: tuple[str, ...] = (),
    schema: ConfigSchema | None = None,
) -> Rule:
    """A ResourceValidationPolicy that runs `check(type, props, config)` on resources of `types`."""
    wanted = tuple(types)

    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        if args.resource_type not in wanted:
            return
        try:
            messages = list(check(args.resource_type, _plain_props(args.props), args.get_config()))
        except NotApplicable as exc:
            args.not_applicable(exc.reason)
            return
        for message in messages:
            report_violation(message, None)

    return Rule(name, description, level, "resource", cloud, wanted, validate, schema, cis, checkov)


def _plain_props(props: Any) -> Props:
    return once("plain", props, lambda: plain(props))


@dataclass
class Node:
    """One stack resource, with the URNs it depends on (parent excluded); its props plain data on first read."""

    urn: str
    type: str
    name: str
    # The policy resource's props as the SDK (or the offline runner) hands them over. A stack rule reads the props of
    # the few types it checks: made plain for every node, a Kubernetes stack's operator CRDs (~600 KB of schema)
    # were a tenth of its plan.
    policy_props: Any = field(repr=False)
    parent: str | None
    dependencies: frozenset[str]
    property_dependencies: dict[str, frozenset[str]] = field(default_factory=dict)

    @cached_property
    def props(self) -> dict[str, Any]:
        return _plain_props(self.policy_props)

    def depends_on(self, urn: str) -> bool:
        return urn in self.dependencies


class Stack:
    """The resources of a stack, indexed for the stack rules."""

    def __init__(self, nodes: Iterable[Node]) -> None:
        self.nodes = list(nodes)
        self.by_urn = {node.urn: node for node in self.nodes}

    @classmethod
    def from_args(cls, args: StackValidationArgs) -> Stack:
        return once("stack", args.resources, lambda: cls._of(args.resources))

    @classmethod
    def _of(cls, resources: Iterable[Any]) -> Stack:
        nodes = []
        for resource in resources:
            prop_deps = {
                key: frozenset(dep.urn for dep in deps)
                for key, deps in resource.property_dependencies.items()
            }
            deps = {dep.urn for dep in resource.dependencies}
            for urns in prop_deps.values():
                deps |= urns
            nodes.append(
                Node(
                    urn=resource.urn,
                    type=resource.resource_type,
                    name=resource.name,
                    policy_props=resource.props,
                    parent=resource.parent.urn if resource.parent is not None else resource.opts.parent,
                    dependencies=frozenset(deps),
                    property_dependencies=prop_deps,
                )
            )
        return cls(nodes)

    def of_type(self, *types: str) -> list[Node]:
        return [node for node in self.nodes if node.type in types]

    def dependencies_of(self, node: Node, *types: str, prop: str | None = None) -> list[Node]:
        """Resources of `types` that `node` depends on (through `prop` when the engine recorded it)."""
        urns = node.property_dependencies.get(prop) if prop is not None else None
        if not urns:
            urns = node.dependencies
        return [
            self.by_urn[urn] for urn in sorted(urns) if urn in self.by_urn and self.by_urn[urn].type in types
        ]

    def dependents_of(self, node: Node, *types: str) -> list[Node]:
        """Resources of `types` that depend on `node`."""
        return [other for other in self.nodes if other.type in types and other.depends_on(node.urn)]


Finding = tuple[str | None, str]  # (urn of the resource at fault, or None for the stack; message)
StackCheck = Callable[[Stack, Config], Iterable[Finding]]


def stack_rule(
    name: str,
    description: str,
    level: str,
    cloud: str,
    types: Iterable[str],
    check: StackCheck,
    *,
    cis: str | None = None,
    checkov: tuple[str, ...] = (),
    schema: ConfigSchema | None = None,
) -> Rule:
    """A StackValidationPolicy that runs `check(stack, config)`, which yields (urn or None, message)."""

    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        try:
            found = list(check(Stack.from_args(args), args.get_config()))
        except NotApplicable as exc:
            args.not_applicable(exc.reason)
            return
        for urn, message in found:
            report_violation(message, urn)

    return Rule(name, description, level, "stack", cloud, tuple(types), validate, schema, cis, checkov)
