"""ACK RRSA rules: the cluster turns RRSA on (components that call Alibaba APIs get a RAM role per service account,
not the node's role), each RAM role trusting the cluster's OIDC provider names one service account exactly, and such a
role gets no system policy (the custom ones are checked for wildcard actions by alicloud-ram-no-wildcard-actions).

RRSA's trust statement, as ACK documents it and ack-ram-tool writes it (AliyunContainerService/ack-ram-tool,
`rrsa associate-role`): Principal.Federated the provider `acs:ram::<account>:oidc-provider/ack-rrsa-<cluster id>`,
Condition.StringEquals {"oidc:aud": "sts.aliyuncs.com", "oidc:iss": <issuer>, "oidc:sub":
"system:serviceaccount:<namespace>:<service account>"}. Inputs: cs.ManagedKubernetes `enableRrsa` ("Default to
false"), ram.Role `assumeRolePolicyDocument` (or the deprecated `document`), ram.RolePolicyAttachment `roleName`,
`policyType` (System | Custom).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..meta import MANDATORY, Config, Finding, Props, Rule, Stack, resource_rule, stack_rule
from ..props import UNKNOWN, JsonError, as_bool, get, parse_json
from .ack import MANAGED_KUBERNETES

RAM_ROLE = "alicloud:ram/role:Role"
ROLE_ATTACHMENT = "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment"
RRSA_PROVIDER = re.compile(r"^acs:ram::[^:]+:oidc-provider/ack-rrsa-")
SERVICE_ACCOUNT = re.compile(r"^system:serviceaccount:[^:*?]+:[^:*?]+$")


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [] if value is None else [value]


def check_rrsa_on(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    enabled = get(props, "enableRrsa")
    if enabled is not UNKNOWN and as_bool(enabled) is not True:
        yield ("RRSA is off: set enable_rrsa = True so components that call Alibaba APIs take a RAM role per service "
               "account, not the nodes' role")


def _rrsa_statements(props: Props) -> Iterator[tuple[int, dict[str, Any]]]:
    """(index, statement) of each Allow statement trusting an ACK RRSA OIDC provider; JsonError when malformed."""
    for key in ("assumeRolePolicyDocument", "document"):
        parsed = parse_json(get(props, key))
        if parsed is None or parsed is UNKNOWN:
            continue
        if not isinstance(parsed, dict):
            raise JsonError("the trust policy is not a JSON object")
        for index, statement in enumerate(_listed(parsed.get("Statement")), start=1):
            if not isinstance(statement, dict) or statement.get("Effect") != "Allow":
                continue
            federated = _listed((statement.get("Principal") or {}).get("Federated"))
            if any(isinstance(arn, str) and RRSA_PROVIDER.match(arn) for arn in federated):
                yield index, statement


def check_rrsa_trust(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    try:
        found = list(_rrsa_statements(props))
    except JsonError as exc:
        yield f"the trust policy is malformed ({exc}): fix it"
        return
    for index, statement in found:
        condition = statement.get("Condition") or {}
        like = (condition.get("StringLike") or {}).get("oidc:sub")
        subjects = _listed((condition.get("StringEquals") or {}).get("oidc:sub"))
        loose = [s for s in subjects if not (isinstance(s, str) and SERVICE_ACCOUNT.match(s))]
        if like is not None or not subjects or loose:
            shown = ", ".join(map(str, [*_listed(like), *loose])) or "no oidc:sub"
            yield (f"trust statement {index} lets the cluster's OIDC provider assume the role for {shown}: name one "
                   "service account exactly, Condition.StringEquals oidc:sub = "
                   "'system:serviceaccount:<namespace>:<name>'")


def check_rrsa_role_policies(stack: Stack, config: Config) -> Iterator[Finding]:
    rrsa = []
    for role in stack.of_type(RAM_ROLE):
        try:
            if any(True for _ in _rrsa_statements(role.props)):
                rrsa.append(role)
        except JsonError:
            continue  # alicloud-ack-rrsa-trust-scoped reports it
    names = {get(role.props, "roleName"): role for role in rrsa}
    for attachment in stack.of_type(ROLE_ATTACHMENT):
        if get(attachment.props, "policyType") != "System":
            continue
        roles = stack.dependencies_of(attachment, RAM_ROLE, prop="roleName")
        target = next((r for r in roles if r in rrsa), None) or names.get(get(attachment.props, "roleName"))
        if target is not None:
            yield attachment.urn, (f"the RRSA role {target.name} gets the system policy "
                                   f"{get(attachment.props, 'policyName')}, whose actions this pack cannot check: "
                                   "attach a custom policy listing the exact actions the component needs")


RULES: list[Rule] = [
    resource_rule(
        "alicloud-ack-rrsa-on",
        "ACK clusters turn RRSA on (RAM roles per service account).",
        MANDATORY, "alicloud", [MANAGED_KUBERNETES], check_rrsa_on,
    ),
    resource_rule(
        "alicloud-ack-rrsa-trust-scoped",
        "RAM roles trusting an ACK cluster's RRSA OIDC provider name one service account exactly (oidc:sub).",
        MANDATORY, "alicloud", [RAM_ROLE], check_rrsa_trust,
    ),
    stack_rule(
        "alicloud-ack-rrsa-custom-policies",
        "RRSA roles get custom policies only (checked for wildcard actions), no system policy.",
        MANDATORY, "alicloud", [RAM_ROLE, ROLE_ATTACHMENT], check_rrsa_role_policies,
    ),
]
