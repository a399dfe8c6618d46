"""AWS identity rules: IAM documents with no wildcard actions, no Allow with NotAction, PassRole scoped,
trust policies naming their principals.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpufleet.stackfile.buckets import wildcard_bucket

from ..meta import MANDATORY, Config, Props, Rule, resource_rule
from ..props import JsonError, get
from .iam_documents import POLICY_TYPES, ROLE_TYPE, documents, is_wildcard, matches, statements


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


def check_no_wildcard_bucket(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    # Resource, not only Action: s3:GetObject on arn:aws:s3:::*/* reads every bucket the account can reach.
    for statement in _each_statement(resource_type, props):
        if isinstance(statement, str) or not statement.allows:
            continue
        s3 = [a for a in statement.strings("Action") if a.strip().lower().startswith(("s3:", "*"))]
        wild = [r for r in statement.strings("Resource") if wildcard_bucket(r, "s3")]
        if s3 and wild:
            yield (
                f"{statement.where} allows {', '.join(sorted(s3))} on {', '.join(sorted(wild))}, every bucket the "
                "pattern matches: name the buckets (identity.s3_read_prefixes)"
            )
        elif s3 and statement.values("NotResource"):
            yield f"{statement.where} allows {', '.join(sorted(s3))} with NotResource (all but a list): use Resource"


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


RULES: list[Rule] = [
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
        "aws-iam-no-wildcard-bucket",
        "IAM policies allow no S3 action on a bucket pattern ('*', arn:aws:s3:::*/*, arn:aws:s3:::data-*).",
        MANDATORY,
        "aws",
        [*POLICY_TYPES, ROLE_TYPE],
        check_no_wildcard_bucket,
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
]
