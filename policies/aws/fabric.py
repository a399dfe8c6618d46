"""AWS EFA fabric rules: every EFA interface the type takes, security groups that pass EFA traffic to
themselves, a cluster placement group and one subnet per EFA group.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..cloud import RDMA_IN_USE_TYPES
from ..meta import (
    ADVISORY,
    MANDATORY,
    Node,
    NotApplicable,
    Rule,
    Stack,
    config_schema,
    resource_rule,
    stack_rule,
)
from ..props import UNKNOWN, as_bool, as_int, get, items
from .resource_types import (
    ALL_PROTOCOLS,
    ASG,
    FLEET,
    LAUNCH_TEMPLATE,
    PLACEMENT_GROUP,
    SECURITY_GROUP,
    SECURITY_GROUP_RULE,
    VPC_EGRESS_RULE,
    VPC_INGRESS_RULE,
)

EFA_TYPES = ("efa", "efa-only")


def efa_interfaces(props: dict[str, Any]) -> list[dict[str, Any]]:
    """The EFA entries of a launch template's network interfaces (efa and efa-only)."""
    interfaces = items(props, "networkInterfaces")
    if not isinstance(interfaces, list):
        return []
    return [i for i in interfaces if isinstance(i, dict) and get(i, "interfaceType") in EFA_TYPES]


def _efa_layout_problems(props: dict[str, Any], expected: int, instance_type: str) -> Iterator[str]:
    interfaces = items(props, "networkInterfaces")
    if interfaces is UNKNOWN or any(i is UNKNOWN for i in interfaces):
        return
    efa = efa_interfaces(props)
    if len(efa) != expected:
        yield (
            f"{instance_type} takes {expected} EFA interfaces but the template declares {len(efa)}: "
            "declare one network_interfaces entry of interface_type 'efa' per network card, "
            f"network_card_index 0..{expected - 1}"
        )
        return
    cards = [as_int(get(i, "networkCardIndex")) if get(i, "networkCardIndex") is not None else 0 for i in efa]
    if any(card is None for card in cards):
        return  # an unknown card index: cannot judge the layout
    if sorted(cards) != list(range(expected)):
        yield (
            f"EFA interfaces sit on network cards {sorted(cards)}: use each network_card_index "
            f"0..{expected - 1} exactly once"
        )
    devices = [
        as_int(get(i, "deviceIndex")) if get(i, "deviceIndex") is not None else 0
        for i in interfaces
        if isinstance(i, dict) and (as_int(get(i, "networkCardIndex")) or 0) == 0
    ]
    if devices and 0 not in devices:
        yield "network card 0 has no device_index 0 (the primary interface): set device_index = 0 on card 0"


def _catalog_efa_count(instance_type: str) -> int | None:
    """What the type takes, from the catalog: deliberately not the program's resolved interface count, so a
    template the program (or anyone's program) gets wrong is judged against the published fact, not itself."""
    from gpufleet.catalog import load_catalog  # the catalog reads data files: only when a rule runs

    found = load_catalog().get("aws", instance_type)
    if found is None or found.fabric.kind != "efa" or found.fabric.interfaces <= 0:
        return None
    return found.fabric.interfaces


def _efa_count_check(in_use: bool) -> Any:
    def check(resource_type: str, props: dict[str, Any], config: Mapping[str, Any]) -> Iterator[str]:
        instance_type = get(props, "instanceType")
        if not isinstance(instance_type, str):
            raise NotApplicable("the launch template names no known instance type")
        listed = instance_type in (config.get(RDMA_IN_USE_TYPES) or [])
        if listed != in_use:
            return
        expected = _catalog_efa_count(instance_type)
        if expected is None:
            if in_use:
                yield f"{instance_type} has no EFA in the catalog, yet its group runs RDMA: pick an EFA type"
            return
        yield from _efa_layout_problems(props, expected, instance_type)

    return check


def _efa_templates(stack: Stack) -> list[Node]:
    return [node for node in stack.of_type(LAUNCH_TEMPLATE) if efa_interfaces(node.props)]


def _self_rule_verdict(rule: Node, group: Node) -> str:
    """'yes' / 'maybe' / 'no': whether a separate rule resource is a self-referencing all-traffic rule."""
    protocol = get(rule.props, "ipProtocol" if rule.type != SECURITY_GROUP_RULE else "protocol")
    if protocol is UNKNOWN:
        return "maybe"
    if str(protocol).lower() not in ALL_PROTOCOLS:
        return "no"
    if as_bool(get(rule.props, "self")) is True:
        return "yes"
    source_key = "sourceSecurityGroupId" if rule.type == SECURITY_GROUP_RULE else "referencedSecurityGroupId"
    source_deps = rule.property_dependencies.get(source_key)
    if source_deps and source_deps == rule.property_dependencies.get("securityGroupId") == {group.urn}:
        return "yes"
    source, target = get(rule.props, source_key), get(rule.props, "securityGroupId")
    if source is UNKNOWN or target is UNKNOWN:
        return "maybe"
    return "yes" if source is not None and source == target else "no"


def _direction(rule: Node) -> str | None:
    if rule.type == VPC_INGRESS_RULE:
        return "ingress"
    if rule.type == VPC_EGRESS_RULE:
        return "egress"
    direction = get(rule.props, "type")
    return direction if direction in ("ingress", "egress") else None


def _self_verdicts(group: Node, stack: Stack) -> dict[str, str]:
    verdicts = {"ingress": "no", "egress": "no"}
    rank = {"no": 0, "maybe": 1, "yes": 2}
    for direction in verdicts:
        inline = items(group.props, direction)
        if inline is UNKNOWN:
            verdicts[direction] = "maybe"
            continue
        for rule in inline:
            if rule is UNKNOWN:
                verdicts[direction] = max(verdicts[direction], "maybe", key=rank.get)
            elif as_bool(get(rule, "self")) is True and str(get(rule, "protocol")).lower() in ALL_PROTOCOLS:
                verdicts[direction] = "yes"
    for rule in stack.dependents_of(group, SECURITY_GROUP_RULE, VPC_INGRESS_RULE, VPC_EGRESS_RULE):
        direction = _direction(rule)
        if direction is not None:
            verdicts[direction] = max(verdicts[direction], _self_rule_verdict(rule, group), key=rank.get)
    return verdicts


def check_efa_security_groups(stack: Stack, config: Mapping[str, Any]) -> Iterator[tuple[str | None, str]]:
    for template in _efa_templates(stack):
        bare = [
            str(index)
            for index, interface in enumerate(items(template.props, "networkInterfaces"))
            if get(interface, "interfaceType") in EFA_TYPES and get(interface, "securityGroups") in (None, [])
        ]
        if bare:
            yield (
                template.urn,
                f"EFA network_interfaces[{', '.join(bare)}] carry no security group: attach the EFA security "
                "group to every EFA interface",
            )
        for group in stack.dependencies_of(template, SECURITY_GROUP, prop="networkInterfaces"):
            missing = [d for d, verdict in _self_verdicts(group, stack).items() if verdict == "no"]
            if missing:
                yield (
                    group.urn,
                    (
                        f"EFA security group lacks a self-referencing all-traffic {' and '.join(missing)} "
                        "rule: add {protocol: '-1', from_port: 0, to_port: 0, self: True} to "
                        f"{' and '.join(missing)} (EFA traffic between nodes is dropped otherwise)"
                    ),
                )


def _groups_using(template: Node, stack: Stack) -> list[Node]:
    return stack.dependents_of(template, ASG, FLEET)


def _reserved(template: Node) -> bool:
    """The template launches into a Capacity Block or capacity reservation, which is placed already."""
    target = get(template.props, "capacityReservationSpecification", "capacityReservationTarget",
                 "capacityReservationId")
    return target is UNKNOWN or (isinstance(target, str) and bool(target))


def check_efa_placement(stack: Stack, config: Mapping[str, Any]) -> Iterator[tuple[str | None, str]]:
    for template in _efa_templates(stack):
        users = _groups_using(template, stack)
        names = [get(template.props, "placement", "groupName")] + [
            get(u.props, "placementGroup") for u in users
        ]
        if _reserved(template):
            # A placement group beside a reservation launches outside it: InsufficientInstanceCapacity while the
            # reservation has room (aws-parallelcluster PlacementGroupCapacityTypeValidator).
            if any(isinstance(name, str) and name for name in names):
                yield template.urn, (
                    "EFA nodes of a Capacity Block or capacity reservation in a placement group: the reservation is "
                    "placed already and a placement group beside it leaves it unused; remove the placement group"
                )
            continue
        if not any(name is UNKNOWN or (isinstance(name, str) and name) for name in names):
            yield (
                template.urn,
                (
                    "EFA nodes outside a placement group: create an ec2.PlacementGroup with strategy "
                    "'cluster' and set placement.group_name (or the group's placement_group)"
                ),
            )
            continue
        for source in [template, *users]:
            for group in stack.dependencies_of(source, PLACEMENT_GROUP):
                strategy = get(group.props, "strategy")
                if isinstance(strategy, str) and strategy != "cluster":
                    yield (
                        group.urn,
                        (f"placement group strategy is {strategy!r} for EFA nodes: set strategy = 'cluster'"),
                    )


def check_efa_single_subnet(stack: Stack, config: Mapping[str, Any]) -> Iterator[tuple[str | None, str]]:
    for template in _efa_templates(stack):
        for group in _groups_using(template, stack):
            if group.type == ASG:
                subnets = items(group.props, "vpcZoneIdentifiers")
                known = {s for s in subnets if isinstance(s, str)} if isinstance(subnets, list) else set()
            else:
                known = set()
                configs = items(group.props, "launchTemplateConfigs")
                for config_ in configs if isinstance(configs, list) else []:
                    overrides = items(config_, "overrides")
                    known |= (
                        {get(o, "subnetId") for o in overrides if isinstance(get(o, "subnetId"), str)}
                        if isinstance(overrides, list)
                        else set()
                    )
            if len(known) > 1:
                yield (
                    group.urn,
                    (
                        f"EFA group spans {len(known)} subnets: EFA does not cross Availability Zones; "
                        "give the group exactly one subnet (network.zones with one zone)"
                    ),
                )


_RDMA_SCHEMA = config_schema(
    {
        RDMA_IN_USE_TYPES: {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "instance types of node groups that run RDMA (the mandatory rule's; the advisory rule "
            "checks the rest)",
        },
    }
)

RULES: list[Rule] = [
    resource_rule(
        "aws-efa-interface-count",
        "Launch templates of node groups that run RDMA declare every EFA interface the instance type takes.",
        MANDATORY,
        "aws",
        [LAUNCH_TEMPLATE],
        _efa_count_check(in_use=True),
        schema=_RDMA_SCHEMA,
    ),
    resource_rule(
        "aws-efa-interface-count-advisory",
        "Launch templates of EFA-capable types not running RDMA declare every EFA interface the type takes.",
        ADVISORY,
        "aws",
        [LAUNCH_TEMPLATE],
        _efa_count_check(in_use=False),
        schema=_RDMA_SCHEMA,
    ),
    stack_rule(
        "aws-efa-security-group-self-rules",
        "Security groups on EFA interfaces allow all traffic to and from themselves (ingress and egress).",
        MANDATORY,
        "aws",
        [LAUNCH_TEMPLATE, SECURITY_GROUP, SECURITY_GROUP_RULE, VPC_INGRESS_RULE, VPC_EGRESS_RULE],
        check_efa_security_groups,
    ),
    stack_rule(
        "aws-efa-cluster-placement-group",
        "EFA launch templates run in a placement group with strategy 'cluster'.",
        MANDATORY,
        "aws",
        [LAUNCH_TEMPLATE, ASG, FLEET, PLACEMENT_GROUP],
        check_efa_placement,
    ),
    stack_rule(
        "aws-efa-single-subnet",
        "Scaling groups of EFA launch templates use exactly one subnet (one Availability Zone).",
        MANDATORY,
        "aws",
        [LAUNCH_TEMPLATE, ASG, FLEET],
        check_efa_single_subnet,
    ),
]
