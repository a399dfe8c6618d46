"""Identities' grants, summarised per identity: who may assume it (its trust policy) and what it may do (its inline
and attached policies' statements: actions on resources, with their conditions), on AWS IAM, Azure RBAC and Alibaba
RAM. The identity is named by the recorded resource the grant depends on."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gpufleet.clouds.program import cloud_program

from ..words import resource_name
from .model import Resource, Resources, ReviewLine, shown

AWS_ROLE, AWS_INLINE, AWS_ATTACHED = ("aws:iam/role:Role", "aws:iam/rolePolicy:RolePolicy",
                                      "aws:iam/rolePolicyAttachment:RolePolicyAttachment")
AWS_EKS_ACCESS = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
AWS_POD_IDENTITY = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
AWS_EKS_ADDON = "aws:eks/addon:Addon"
AZURE_ASSIGNMENT, AZURE_DEFINITION = ("azure-native:authorization:RoleAssignment",
                                      "azure-native:authorization:RoleDefinition")
RAM_ROLE, RAM_POLICY, RAM_ATTACHED = ("alicloud:ram/role:Role", "alicloud:ram/policy:Policy",
                                      "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment")


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [] if value is None else [value]


def _conditions(statement: Mapping[str, Any]) -> str:
    tests = [f"{key}={shown(_listed(value))}" for operator in (statement.get("Condition") or {}).values()
             for key, value in (operator or {}).items()]
    return f" if {', '.join(tests)}" if tests else ""


def _document(text: Any) -> list[Mapping[str, Any]]:
    """A policy document's statements; a document the plan cannot read (not yet known) has none."""
    try:
        document = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return []
    return [s for s in _listed((document or {}).get("Statement")) if isinstance(s, Mapping)]


def statements(text: Any) -> str:
    """`allow a, b on r1, r2 if k=v; deny ...` of a policy document."""
    said = []
    for statement in _document(text):
        effect = str(statement.get("Effect", "Allow")).lower()
        actions = _listed(statement.get("Action")) or [f"all but {shown(_listed(statement.get('NotAction')))}"]
        targets = _listed(statement.get("Resource")) or [f"all but {shown(_listed(statement.get('NotResource')))}"]
        said.append(f"{effect} {shown(actions)} on {shown(targets)}{_conditions(statement)}")
    return "; ".join(said)


def trust(text: Any) -> str:
    """Who may assume a role: its trust policy's principals, with their conditions."""
    said = []
    for statement in _document(text):
        principal = statement.get("Principal")
        who = [f"{kind} {shown(_listed(value))}" for kind, value in principal.items()] \
            if isinstance(principal, Mapping) else [str(principal)]
        said.append(f"{shown(who)}{_conditions(statement)}")
    return "assumed by " + "; ".join(said) if said else ""


def _identity(rules: Resources, grant: Resource, prop: str, fallback: Any) -> str:
    names = rules.dependency_names(grant, prop)
    return names[0] if names else str(fallback)


def _line(urn: str, subject: str, detail: str) -> ReviewLine:
    return ReviewLine("grants", urn, subject, detail)


def _role_name(rules: Resources, assignment: Resource, role_id: str) -> str:
    definitions = [d for d in rules.dependencies(assignment, "roleDefinitionId") if d["type"] == AZURE_DEFINITION]
    if definitions:
        return str((definitions[0].get("inputs") or {}).get("roleName") or resource_name(definitions[0]["urn"]))
    guid = role_id.rsplit("/", 1)[-1]
    return cloud_program("azure").role_names().get(guid.lower(), f"role {guid}")


def _azure_scope(rules: Resources, assignment: Resource, scope: Any) -> str:
    names = rules.dependency_names(assignment, "scope")
    if names:
        return shown(names)
    parts = str(scope).strip("/").split("/")  # .../providers/<namespace>/<type>/<name>: the last kind and name
    return "/".join(parts[-2:]) if len(parts) > 2 else str(scope)


def grant_lines(rules: Resources) -> list[ReviewLine]:
    """A line per identity and grant, in the order the plan records them; the caller groups by identity."""
    lines = []
    for r in rules.all:
        inputs, kind = r.get("inputs") or {}, r["type"]
        if kind in (AWS_ROLE, RAM_ROLE) and (who := trust(inputs.get("assumeRolePolicy")
                                                         or inputs.get("assumeRolePolicyDocument"))):
            lines.append(_line(r["urn"], resource_name(r["urn"]), who))
        elif kind == AWS_INLINE and (said := statements(inputs.get("policy"))):
            lines.append(_line(r["urn"], _identity(rules, r, "role", inputs.get("role")), said))
        elif kind == AWS_ATTACHED:
            lines.append(_line(r["urn"], _identity(rules, r, "role", inputs.get("role")),
                               f"managed policy {str(inputs.get('policyArn')).rsplit('/', 1)[-1]}"))
        elif kind == AWS_EKS_ACCESS:
            scope = (inputs.get("accessScope") or {}).get("type", "")
            lines.append(_line(r["urn"], str(inputs.get("principalArn")).rsplit("/", 1)[-1],
                               f"EKS access policy {str(inputs.get('policyArn')).rsplit('/', 1)[-1]} on the {scope}"))
        elif kind == AWS_POD_IDENTITY:
            lines.append(_line(r["urn"], _identity(rules, r, "roleArn", inputs.get("roleArn")),
                               f"assumed by pods of service account {inputs.get('namespace')}/"
                               f"{inputs.get('serviceAccount')}"))
        elif kind == AWS_EKS_ADDON:
            lines += _addon_identities(rules, r, inputs)
        elif kind == AZURE_ASSIGNMENT:
            principal = _identity(rules, r, "principalId", f"{inputs.get('principalType', 'principal')} "
                                                           f"{inputs.get('principalId')}")
            lines.append(_line(r["urn"], principal, f"{_role_name(rules, r, str(inputs.get('roleDefinitionId')))} "
                                                    f"on {_azure_scope(rules, r, inputs.get('scope'))}"))
        elif kind == AZURE_DEFINITION:
            permissions = inputs.get("permissions") or []
            actions = [a for p in permissions for key in ("actions", "dataActions") for a in p.get(key) or []]
            lines.append(_line(r["urn"], str(inputs.get("roleName") or resource_name(r["urn"])),
                               f"custom role: allow {shown(actions)}"))
        elif kind == RAM_ATTACHED:
            lines.append(_line(r["urn"], _identity(rules, r, "roleName", inputs.get("roleName")),
                               _ram_policy(rules, r, inputs)))
    return lines


def _addon_identities(rules: Resources, addon: Resource, inputs: Mapping[str, Any]) -> list[ReviewLine]:
    """An EKS add-on's pod identities: each role (by the recorded role it depends on where there is one association:
    the dependencies of several carry no order) and the add-on's service account that assumes it."""
    associations = inputs.get("podIdentityAssociations") or []
    roles = rules.dependency_names(addon, "podIdentityAssociations")
    if len(roles) != 1 or len(associations) != 1:
        roles = [str(a.get("roleArn")).rsplit("/", 1)[-1] for a in associations]
    return [_line(addon["urn"], role, f"assumed by pods of service account {association.get('serviceAccount')} "
                                      f"(add-on {inputs.get('addonName')})")
            for role, association in zip(roles, associations, strict=True)]


def _ram_policy(rules: Resources, attachment: Resource, inputs: Mapping[str, Any]) -> str:
    documents = [p for p in rules.dependencies(attachment, "policyName") if p["type"] == RAM_POLICY]
    if documents:
        return statements((documents[0].get("inputs") or {}).get("policyDocument")) or "a policy with no statement"
    return f"{str(inputs.get('policyType', '')).lower()} policy {inputs.get('policyName')}".strip()
