"""AWS rules: encryption, IMDSv2, network exposure, IAM, EFA fabric, pinned images, spot handling.

Property names are the engine's (camelCase); fix hints name the Python SDK's arguments (snake_case).
Every check skips values it cannot see (unknown during preview) and fails only on known-bad values.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .capacity import AWS_ASG, AWS_FLEET, AWS_INSTANCE, AWS_LAUNCH_TEMPLATE
from .iam_documents import POLICY_TYPES, ROLE_TYPE, documents, is_wildcard, matches, statements
from .images import (
    AMI_ID,
    EXPECTED_PARENT_SHAPE,
    PROFILE_TAG,
    STACK_TAG,
    STATUS_TAG,
    UNBAKED,
    is_valid_parent_image,
    lock_module,
    next_steps,
)
from .meta import (
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
from .props import UNKNOWN, JsonError, as_bool, as_int, get, items, parse_json

Props = dict[str, Any]
Config = Mapping[str, Any]

EBS_VOLUME = "aws:ebs/volume:Volume"
KMS_KEY = "aws:kms/key:Key"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
SECURITY_GROUP_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
VPC_INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
VPC_EGRESS_RULE = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
PLACEMENT_GROUP = "aws:ec2/placementGroup:PlacementGroup"
EVENT_RULE = "aws:cloudwatch/eventRule:EventRule"
IMAGE_RECIPE = "aws:imagebuilder/imageRecipe:ImageRecipe"
INFRASTRUCTURE_CONFIGURATION = "aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration"

EFA_TYPES = ("efa", "efa-only")
ALL_PROTOCOLS = ("-1", "all")
OPEN_CIDRS = ("0.0.0.0/0", "::/0")
ADMIN_PORTS = (22, 3389)
SPOT_WARNING = "EC2 Spot Instance Interruption Warning"
FLOATING_VERSIONS = ("$Latest", "$Default")

# --------------------------------------------------------------------------------------------------
# Encryption


def _cmk_problem(where: str, encrypted: Any, kms_key_id: Any) -> Iterator[str]:
    if as_bool(encrypted) is not True and encrypted is not UNKNOWN:
        yield f"{where} is not encrypted: set encrypted = True and kms_key_id to a customer-managed KMS key"
        return
    if kms_key_id is None or kms_key_id == "":
        yield (
            f"{where} is encrypted with the AWS-managed key: set kms_key_id to a customer-managed KMS key "
            "(storage.kms_key)"
        )
    elif isinstance(kms_key_id, str) and "alias/aws/" in kms_key_id:
        yield (
            f"{where} uses the AWS-managed key {kms_key_id}: set kms_key_id to a customer-managed KMS key "
            "(storage.kms_key)"
        )


def check_volume_cmk(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    yield from _cmk_problem("the volume", get(props, "encrypted"), get(props, "kmsKeyId"))


def check_block_device_cmk(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    if resource_type == AWS_INSTANCE:
        root = get(props, "rootBlockDevice")
        if root is None:
            yield (
                "the root volume is not declared, so it takes the AMI's (possibly unencrypted) settings: set "
                "root_block_device with encrypted = True and kms_key_id"
            )
        elif root is not UNKNOWN:
            yield from _cmk_problem("root_block_device", get(root, "encrypted"), get(root, "kmsKeyId"))
        devices = items(props, "ebsBlockDevices")
        for index, device in enumerate(devices if isinstance(devices, list) else []):
            if device is not UNKNOWN:
                yield from _cmk_problem(
                    f"ebs_block_devices[{index}]", get(device, "encrypted"), get(device, "kmsKeyId")
                )
        return
    mappings = items(props, "blockDeviceMappings")
    if mappings is UNKNOWN:
        return
    if not mappings:
        yield (
            "no block_device_mappings: the root volume takes the AMI's (possibly unencrypted) settings; "
            "declare it with ebs.encrypted = 'true' and ebs.kms_key_id"
        )
    for index, mapping in enumerate(mappings):
        ebs = get(mapping, "ebs")
        if ebs is None or ebs is UNKNOWN:
            continue  # instance-store or no-device mappings carry no EBS volume
        yield from _cmk_problem(
            f"block_device_mappings[{index}].ebs", get(ebs, "encrypted"), get(ebs, "kmsKeyId")
        )


def check_kms_rotation(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    spec = get(props, "customerMasterKeySpec") or get(props, "keySpec")
    if isinstance(spec, str) and spec != "SYMMETRIC_DEFAULT":
        raise NotApplicable(f"key spec {spec} cannot rotate automatically")
    rotation = get(props, "enableKeyRotation")
    if rotation is not UNKNOWN and as_bool(rotation) is not True:
        yield "automatic key rotation is off: set enable_key_rotation = True"


def check_kms_deletion_window(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    days = as_int(get(props, "deletionWindowInDays"))
    if days is not None and days < 7:
        yield f"deletion_window_in_days is {days}: set it to at least 7 (30 is the default)"


# --------------------------------------------------------------------------------------------------
# Instance metadata and exposure


def check_imdsv2(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    block = "instanceMetadataOptions" if resource_type == INFRASTRUCTURE_CONFIGURATION else "metadataOptions"
    arg = "instance_metadata_options" if block == "instanceMetadataOptions" else "metadata_options"
    options = get(props, block)
    if options is UNKNOWN:
        return
    tokens, endpoint = get(options, "httpTokens"), get(options, "httpEndpoint")
    if tokens is UNKNOWN or tokens == "required" or endpoint == "disabled":
        return
    shown = "not set (defaults to 'optional')" if tokens is None else repr(tokens)
    yield f"IMDSv1 stays enabled ({arg}.http_tokens is {shown}): set {arg}.http_tokens = 'required'"


def _ports_exposed(protocol: Any, from_port: Any, to_port: Any) -> str | None:
    """What a rule open to the internet exposes: 'all ports', 'port 22'... or None."""
    proto = str(protocol).lower() if isinstance(protocol, (str, int)) else None
    if proto is None:
        return None
    if proto in ALL_PROTOCOLS:
        return "all ports"
    if proto not in ("tcp", "6", "udp", "17"):
        return None
    low, high = as_int(from_port), as_int(to_port)
    if low is None or high is None:
        return None
    if low <= 0 and high >= 65535:
        return "all ports"
    hit = [str(port) for port in ADMIN_PORTS if low <= port <= high]
    return f"port {' and '.join(hit)}" if hit else None


def _open_cidrs(*values: Any) -> list[str]:
    found: list[str] = []
    for value in values:
        listed = value if isinstance(value, list) else [value]
        found += [cidr for cidr in listed if cidr in OPEN_CIDRS]
    return found


def check_public_admin_ingress(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    hint = "allow only network.admin_cidrs (or use SSM Session Manager) instead"
    if resource_type == SECURITY_GROUP:
        rules = items(props, "ingress")
        for index, rule in enumerate(rules if isinstance(rules, list) else []):
            cidrs = _open_cidrs(get(rule, "cidrBlocks"), get(rule, "ipv6CidrBlocks"))
            exposed = _ports_exposed(get(rule, "protocol"), get(rule, "fromPort"), get(rule, "toPort"))
            if cidrs and exposed:
                yield f"ingress[{index}] opens {exposed} to {', '.join(cidrs)}: {hint}"
        return
    if resource_type == SECURITY_GROUP_RULE:
        if get(props, "type") != "ingress":
            return
        cidrs = _open_cidrs(get(props, "cidrBlocks"), get(props, "ipv6CidrBlocks"))
        exposed = _ports_exposed(get(props, "protocol"), get(props, "fromPort"), get(props, "toPort"))
    else:
        cidrs = _open_cidrs(get(props, "cidrIpv4"), get(props, "cidrIpv6"))
        exposed = _ports_exposed(get(props, "ipProtocol"), get(props, "fromPort"), get(props, "toPort"))
    if cidrs and exposed:
        yield f"the rule opens {exposed} to {', '.join(cidrs)}: {hint}"


def check_no_public_ip(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    if resource_type == AWS_INSTANCE:
        if as_bool(get(props, "associatePublicIpAddress")) is True:
            yield "the instance gets a public IP: set associate_public_ip_address = False (private subnets)"
        return
    interfaces = items(props, "networkInterfaces")
    for index, interface in enumerate(interfaces if isinstance(interfaces, list) else []):
        if as_bool(get(interface, "associatePublicIpAddress")) is True:
            yield (
                f"network_interfaces[{index}] asks for a public IP: set associate_public_ip_address = False; "
                "GPU nodes live in private subnets with NAT"
            )


def check_sg_on_interfaces(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    interfaces = items(props, "networkInterfaces")
    if not isinstance(interfaces, list) or not interfaces:
        return
    for key, arg in (
        ("vpcSecurityGroupIds", "vpc_security_group_ids"),
        ("securityGroupNames", "security_group_names"),
    ):
        value = items(props, key)
        if isinstance(value, list) and value:
            yield (
                f"{arg} is set beside network_interfaces, which EC2 rejects: move the security groups to "
                "each network_interfaces[].security_groups"
            )


# --------------------------------------------------------------------------------------------------
# IAM


def _each_statement(resource_type: str, props: dict[str, Any]) -> Iterator[Any]:
    """Statements of every permission document; a malformed document yields its error message."""
    for label, document in documents(resource_type, props):
        try:
            yield from statements(document, label)
        except JsonError as exc:
            yield f"{label} is {exc}: fix the policy document"


def check_iam_wildcards(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    for statement in _each_statement(resource_type, props):
        if isinstance(statement, str):
            yield statement
            continue
        if not statement.allows:
            continue
        wild = [action for action in statement.strings("Action") if is_wildcard(action)]
        if wild:
            yield (
                f"{statement.where} allows wildcard actions {', '.join(sorted(wild))}: list the exact "
                "actions the nodes need"
            )


def check_iam_notaction(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    for statement in _each_statement(resource_type, props):
        # NotAction with Deny is a guardrail; with Allow it grants everything not listed.
        if not isinstance(statement, str) and statement.allows and statement.values("NotAction"):
            yield f"{statement.where} allows NotAction (all but a list): use Action with the exact actions"


def check_iam_passrole(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    for statement in _each_statement(resource_type, props):
        if isinstance(statement, str) or not statement.allows:
            continue
        passes = any(matches(action, "iam:PassRole") for action in statement.strings("Action"))
        if passes and "*" in statement.strings("Resource"):
            yield (
                f"{statement.where} allows iam:PassRole on Resource '*': scope Resource to the role ARNs the "
                "nodes pass"
            )


def check_trust_principal(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    try:
        found = list(statements(get(props, "assumeRolePolicy"), "assume_role_policy"))
    except JsonError as exc:
        yield f"assume_role_policy is {exc}: fix the trust policy document"
        return
    for statement in found:
        if not statement.allows:
            continue
        principal = statement.body.get("Principal")
        aws = principal.get("AWS") if isinstance(principal, dict) else principal
        listed = aws if isinstance(aws, list) else [aws]
        if "*" in listed:
            yield (
                f"{statement.where} lets any principal ('*') assume the role: name the service "
                "(e.g. ec2.amazonaws.com) or account that may assume it"
            )


# --------------------------------------------------------------------------------------------------
# Images


def _unbaked_tags(props: Props) -> dict[str, Any] | None:
    """The launch template's tags when they mark its image profile unbaked (components.lock.status)."""
    tags = get(props, "tags")
    return tags if isinstance(tags, dict) and tags.get(STATUS_TAG) == UNBAKED else None


def check_image_pinned(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    recipe = resource_type == IMAGE_RECIPE
    key, arg = ("parentImage", "parent_image") if recipe else ("imageId", "image_id")
    image = get(props, key)
    if image is UNKNOWN:
        return
    fix = (
        "use the parent image pinned in images/lock.yaml base_images" if recipe
        else "use the AMI id pinned in images/lock.yaml for this profile and region"
    )
    if not isinstance(image, str) or not image:
        if not recipe and _unbaked_tags(props) is not None:
            return  # an unbaked profile: aws-image-unbaked reports it and `pulumi up` refuses the stack
        yield f"{arg} is not set: {fix}"
        return
    if image.startswith("resolve:ssm:"):
        yield f"{arg} {image!r} resolves at launch time, so nodes drift: {fix}"
        return
    if recipe and not is_valid_parent_image("aws", image):
        yield f"{arg} {image!r} is not a pinnable parent image (expected {EXPECTED_PARENT_SHAPE['aws']}): {fix}"
        return
    if not recipe and not AMI_ID.match(image):
        yield f"{arg} {image!r} is not a literal AMI id: {fix}"
        return
    lock = lock_module()
    try:
        pinned = lock.load_lock().image_ids("aws")
    except (lock.LockError, OSError) as exc:
        yield f"images/lock.yaml could not be read ({exc}), so {arg} {image!r} is unchecked: fix the lock"
        return
    if image not in pinned:
        yield f"{arg} {image!r} is not pinned in images/lock.yaml: {fix}"


def check_image_unbaked(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    """A launch template of a profile the lock has no image for yet: it plans, but cannot deploy."""
    image = get(props, "imageId")
    tags = _unbaked_tags(props)
    if image is UNKNOWN or (isinstance(image, str) and image) or tags is None:
        return
    yield (
        f"image profile {tags.get(PROFILE_TAG, '(unnamed)')!r} is not baked for this region yet "
        "(images/lock.yaml: id null, status unbaked): the launch template boots no image and `pulumi up` "
        f"refuses the stack; {next_steps(tags.get(STACK_TAG))}"
    )


# --------------------------------------------------------------------------------------------------
# Scaling groups and spot


def _asg_versions(props: dict[str, Any]) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    template = get(props, "launchTemplate")
    if isinstance(template, dict):
        found.append(("launch_template.version", get(template, "version")))
    spec = get(props, "mixedInstancesPolicy", "launchTemplate", "launchTemplateSpecification")
    if isinstance(spec, dict):
        found.append(
            (
                "mixed_instances_policy.launch_template.launch_template_specification.version",
                get(spec, "version"),
            )
        )
    overrides = items(props, "mixedInstancesPolicy", "launchTemplate", "overrides")
    for index, override in enumerate(overrides if isinstance(overrides, list) else []):
        spec = get(override, "launchTemplateSpecification")
        if isinstance(spec, dict):
            found.append((f"overrides[{index}].launch_template_specification.version", get(spec, "version")))
    return found


def check_template_version(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    if resource_type == AWS_FLEET:
        configs = items(props, "launchTemplateConfigs")
        versions = [
            (
                f"launch_template_configs[{index}].launch_template_specification.version",
                get(config_, "launchTemplateSpecification", "version"),
            )
            for index, config_ in enumerate(configs if isinstance(configs, list) else [])
        ]
    else:
        versions = _asg_versions(props)
    for where, version in versions:
        if version is UNKNOWN:
            continue
        if version is None or version in FLOATING_VERSIONS:
            shown = "not set ($Default)" if version is None else version
            yield (
                f"{where} is {shown}: instance refresh does not see template changes; set it to the launch "
                "template's latest_version"
            )


def _on_demand_percentage(props: dict[str, Any]) -> int | None:
    distribution = get(props, "mixedInstancesPolicy", "instancesDistribution")
    if get(props, "mixedInstancesPolicy") is None:
        return 100
    if distribution is UNKNOWN:
        return None
    value = get(distribution, "onDemandPercentageAboveBaseCapacity")
    if value is UNKNOWN:
        return None
    return 100 if value is None else as_int(value)  # AWS default: 100 (all on-demand)


def check_spot_allocation(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    percentage = _on_demand_percentage(props)
    if percentage is None or percentage >= 100:
        return
    strategy = get(props, "mixedInstancesPolicy", "instancesDistribution", "spotAllocationStrategy")
    if strategy is UNKNOWN or strategy == "price-capacity-optimized":
        return
    shown = "not set (lowest-price)" if strategy is None else repr(strategy)
    yield (
        f"spot_allocation_strategy is {shown}: set instances_distribution.spot_allocation_strategy = "
        "'price-capacity-optimized' (AWS's recommendation; lowest-price risks high interruption rates)"
    )


def _templates_of(node: Node, stack: Stack) -> list[Node]:
    return stack.dependencies_of(node, AWS_LAUNCH_TEMPLATE)


def _is_spot_group(node: Node, stack: Stack) -> bool:
    if node.type == AWS_FLEET:
        spec = get(node.props, "targetCapacitySpecification")
        return (
            get(spec, "defaultTargetCapacityType") == "spot"
            or (as_int(get(spec, "spotTargetCapacity")) or 0) > 0
        )
    percentage = _on_demand_percentage(node.props)
    if percentage is not None and percentage < 100:
        return True
    return any(
        get(t.props, "instanceMarketOptions", "marketType") == "spot" for t in _templates_of(node, stack)
    )


def check_capacity_rebalance(stack: Stack, config: Mapping[str, Any]) -> Iterator[tuple[str | None, str]]:
    for group in stack.of_type(AWS_ASG):
        rebalance = get(group.props, "capacityRebalance")
        if _is_spot_group(group, stack) and rebalance is not UNKNOWN and as_bool(rebalance) is not True:
            yield (
                group.urn,
                (
                    "spot group without capacity rebalancing: set capacity_rebalance = True so the group "
                    "replaces instances on rebalance recommendations, before the 2-minute notice"
                ),
            )


def _event_pattern_matches(rule: Node) -> bool | None:
    """True/False whether the rule catches spot interruption warnings; None when it cannot be seen."""
    try:
        pattern = parse_json(get(rule.props, "eventPattern"))
    except JsonError:
        return False
    if pattern is UNKNOWN:
        return None
    detail = get(pattern, "detail-type") if isinstance(pattern, dict) else None
    listed = detail if isinstance(detail, list) else [detail]
    return SPOT_WARNING in listed


def check_spot_handler(stack: Stack, config: Mapping[str, Any]) -> Iterator[tuple[str | None, str]]:
    spot = [node for node in stack.of_type(AWS_ASG, AWS_FLEET) if _is_spot_group(node, stack)]
    if not spot:
        return
    verdicts = [_event_pattern_matches(rule) for rule in stack.of_type(EVENT_RULE)]
    if any(verdict is not False for verdict in verdicts):
        return
    for group in spot:
        yield (
            group.urn,
            (
                f"spot capacity but no EventBridge rule for '{SPOT_WARNING}': add a cloudwatch.EventRule "
                "with event_pattern detail-type ['EC2 Spot Instance Interruption Warning'] and a target "
                "that drains the node"
            ),
        )


# --------------------------------------------------------------------------------------------------
# EFA fabric


def _efa_interfaces(props: dict[str, Any]) -> list[dict[str, Any]]:
    interfaces = items(props, "networkInterfaces")
    if not isinstance(interfaces, list):
        return []
    return [i for i in interfaces if isinstance(i, dict) and get(i, "interfaceType") in EFA_TYPES]


def _efa_layout_problems(props: dict[str, Any], expected: int, instance_type: str) -> Iterator[str]:
    interfaces = items(props, "networkInterfaces")
    if interfaces is UNKNOWN or any(i is UNKNOWN for i in interfaces):
        return
    efa = _efa_interfaces(props)
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
    from components.catalog import load_catalog  # the catalog reads data files: only when a rule runs

    found = load_catalog().get("aws", instance_type)
    if found is None or found.fabric.kind != "efa" or found.fabric.interfaces <= 0:
        return None
    return found.fabric.interfaces


def _efa_count_check(required: bool) -> Any:
    def check(resource_type: str, props: dict[str, Any], config: Mapping[str, Any]) -> Iterator[str]:
        instance_type = get(props, "instanceType")
        if not isinstance(instance_type, str):
            raise NotApplicable("the launch template names no known instance type")
        listed = instance_type in (config.get("rdmaRequiredInstanceTypes") or [])
        if listed != required:
            return
        expected = _catalog_efa_count(instance_type)
        if expected is None:
            if required:
                yield f"{instance_type} has no EFA in the catalog, yet RDMA is required: pick an EFA type"
            return
        yield from _efa_layout_problems(props, expected, instance_type)

    return check


def _efa_templates(stack: Stack) -> list[Node]:
    return [node for node in stack.of_type(AWS_LAUNCH_TEMPLATE) if _efa_interfaces(node.props)]


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
    return stack.dependents_of(template, AWS_ASG, AWS_FLEET)


def check_efa_placement(stack: Stack, config: Mapping[str, Any]) -> Iterator[tuple[str | None, str]]:
    for template in _efa_templates(stack):
        users = _groups_using(template, stack)
        names = [get(template.props, "placement", "groupName")] + [
            get(u.props, "placementGroup") for u in users
        ]
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
            if group.type == AWS_ASG:
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


# --------------------------------------------------------------------------------------------------
# The rules

_RDMA_SCHEMA = config_schema(
    {
        "rdmaRequiredInstanceTypes": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "instance types of node groups with rdma: required (the mandatory rule's)",
        },
    }
)

RULES: list[Rule] = [
    resource_rule(
        "aws-ebs-volume-cmk-encryption",
        "EBS volumes are encrypted with a customer-managed KMS key.",
        MANDATORY,
        "aws",
        [EBS_VOLUME],
        check_volume_cmk,
        cis="2.2.1 (v3.0.0, account default; related)",
        checkov=("CKV_AWS_3", "CKV_AWS_189"),
    ),
    resource_rule(
        "aws-block-device-cmk-encryption",
        "Launch-template and instance block devices are encrypted with a customer-managed KMS key.",
        MANDATORY,
        "aws",
        [AWS_LAUNCH_TEMPLATE, AWS_INSTANCE],
        check_block_device_cmk,
        checkov=("CKV_AWS_8",),
    ),
    resource_rule(
        "aws-kms-key-rotation",
        "Customer-managed symmetric KMS keys rotate automatically.",
        MANDATORY,
        "aws",
        [KMS_KEY],
        check_kms_rotation,
        cis="3.6 (v3.0.0)",
        checkov=("CKV_AWS_7",),
    ),
    resource_rule(
        "aws-kms-key-deletion-window",
        "KMS keys keep a deletion window of at least 7 days.",
        MANDATORY,
        "aws",
        [KMS_KEY],
        check_kms_deletion_window,
    ),
    resource_rule(
        "aws-imdsv2-required",
        "Instances, launch templates and image-builder instances require IMDSv2 (http_tokens = required).",
        MANDATORY,
        "aws",
        [AWS_LAUNCH_TEMPLATE, AWS_INSTANCE, INFRASTRUCTURE_CONFIGURATION],
        check_imdsv2,
        cis="5.6 (v3.0.0)",
        checkov=("CKV_AWS_79",),
    ),
    resource_rule(
        "aws-no-public-admin-ingress",
        "No security group rule opens SSH (22), RDP (3389) or all ports to 0.0.0.0/0 or ::/0.",
        MANDATORY,
        "aws",
        [SECURITY_GROUP, SECURITY_GROUP_RULE, VPC_INGRESS_RULE],
        check_public_admin_ingress,
        cis="5.2, 5.3 (v3.0.0)",
        checkov=("CKV_AWS_24", "CKV_AWS_25", "CKV_AWS_277"),
    ),
    resource_rule(
        "aws-no-public-ip",
        "GPU nodes get no public IP address.",
        MANDATORY,
        "aws",
        [AWS_LAUNCH_TEMPLATE, AWS_INSTANCE],
        check_no_public_ip,
        checkov=("CKV_AWS_88",),
    ),
    resource_rule(
        "aws-launch-template-sg-on-interfaces",
        "Launch templates with network interfaces put security groups on the interfaces, not the template.",
        MANDATORY,
        "aws",
        [AWS_LAUNCH_TEMPLATE],
        check_sg_on_interfaces,
    ),
    resource_rule(
        "aws-iam-no-wildcard-actions",
        "IAM policies allow no wildcard actions ('*', 'svc:*', 'svc:Get*').",
        MANDATORY,
        "aws",
        [*POLICY_TYPES, ROLE_TYPE],
        check_iam_wildcards,
        cis="1.16 (v3.0.0)",
        checkov=("CKV_AWS_63",),
    ),
    resource_rule(
        "aws-iam-no-notaction",
        "IAM policies do not Allow with NotAction.",
        MANDATORY,
        "aws",
        [*POLICY_TYPES, ROLE_TYPE],
        check_iam_notaction,
    ),
    resource_rule(
        "aws-iam-passrole-scoped",
        "iam:PassRole is never allowed on Resource '*'.",
        MANDATORY,
        "aws",
        [*POLICY_TYPES, ROLE_TYPE],
        check_iam_passrole,
    ),
    resource_rule(
        "aws-iam-trust-no-wildcard-principal",
        "Role trust policies name the principals that may assume the role (no '*').",
        MANDATORY,
        "aws",
        [ROLE_TYPE],
        check_trust_principal,
        checkov=("CKV_AWS_60",),
    ),
    resource_rule(
        "aws-image-pinned",
        "Launch templates use a literal AMI id, image recipes a parent image, pinned in images/lock.yaml.",
        MANDATORY,
        "aws",
        [AWS_LAUNCH_TEMPLATE, IMAGE_RECIPE],
        check_image_pinned,
    ),
    resource_rule(
        "aws-image-unbaked",
        "Launch templates boot a baked image; an unbaked lock entry is reported with the commands to bake and pin it.",
        ADVISORY,
        "aws",
        [AWS_LAUNCH_TEMPLATE],
        check_image_unbaked,
    ),
    resource_rule(
        "aws-launch-template-version-pinned",
        "Auto Scaling groups and fleets reference an explicit launch template version, not $Latest/$Default.",
        ADVISORY,
        "aws",
        [AWS_ASG, AWS_FLEET],
        check_template_version,
    ),
    resource_rule(
        "aws-spot-allocation-strategy",
        "Spot Auto Scaling groups use the price-capacity-optimized allocation strategy.",
        ADVISORY,
        "aws",
        [AWS_ASG],
        check_spot_allocation,
    ),
    resource_rule(
        "aws-efa-interface-count",
        "Launch templates of RDMA-required node groups declare every EFA interface the instance type takes.",
        MANDATORY,
        "aws",
        [AWS_LAUNCH_TEMPLATE],
        _efa_count_check(required=True),
        schema=_RDMA_SCHEMA,
    ),
    resource_rule(
        "aws-efa-interface-count-advisory",
        "Launch templates of EFA-capable types (RDMA not required) declare every EFA interface it takes.",
        ADVISORY,
        "aws",
        [AWS_LAUNCH_TEMPLATE],
        _efa_count_check(required=False),
        schema=_RDMA_SCHEMA,
    ),
    stack_rule(
        "aws-efa-security-group-self-rules",
        "Security groups on EFA interfaces allow all traffic to and from themselves (ingress and egress).",
        MANDATORY,
        "aws",
        [AWS_LAUNCH_TEMPLATE, SECURITY_GROUP, SECURITY_GROUP_RULE, VPC_INGRESS_RULE, VPC_EGRESS_RULE],
        check_efa_security_groups,
    ),
    stack_rule(
        "aws-efa-cluster-placement-group",
        "EFA launch templates run in a placement group with strategy 'cluster'.",
        MANDATORY,
        "aws",
        [AWS_LAUNCH_TEMPLATE, AWS_ASG, AWS_FLEET, PLACEMENT_GROUP],
        check_efa_placement,
    ),
    stack_rule(
        "aws-efa-single-subnet",
        "Scaling groups of EFA launch templates use exactly one subnet (one Availability Zone).",
        MANDATORY,
        "aws",
        [AWS_LAUNCH_TEMPLATE, AWS_ASG, AWS_FLEET],
        check_efa_single_subnet,
    ),
    stack_rule(
        "aws-spot-capacity-rebalance",
        "Spot Auto Scaling groups enable capacity rebalancing.",
        MANDATORY,
        "aws",
        [AWS_ASG, AWS_LAUNCH_TEMPLATE],
        check_capacity_rebalance,
    ),
    stack_rule(
        "aws-spot-interruption-handler",
        "Stacks with spot capacity have an EventBridge rule for EC2 Spot Instance Interruption Warnings.",
        MANDATORY,
        "aws",
        [AWS_ASG, AWS_FLEET, AWS_LAUNCH_TEMPLATE, EVENT_RULE],
        check_spot_handler,
    ),
]
