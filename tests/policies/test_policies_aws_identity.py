"""AWS identity rules: wildcard actions, NotAction, PassRole, trust principals.

Each fires on a bad resource and passes a good one, through the SDK's own argument types.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_rule_args import validate


def doc(*statements: dict[str, Any], as_list: bool = True) -> str:
    body = list(statements) if as_list else statements[0]
    return json.dumps({"Version": "2012-10-17", "Statement": body})


@pytest.mark.parametrize("action", ["*", "s3:*", "ec2:Describe*", ["logs:PutLogEvents", "s3:Get*"]])
def test_wildcard_actions_fail(action):
    policy = doc({"Effect": "Allow", "Action": action, "Resource": "*"}, as_list=False)
    (message,) = validate("aws-iam-no-wildcard-actions", "aws:iam/rolePolicy:RolePolicy", {"policy": policy})
    assert message.startswith("policy statement 1 allows wildcard actions") and "exact actions" in message


def test_exact_actions_and_wildcard_deny_pass():
    policy = doc(
        {"Effect": "Allow", "Action": ["ec2:DescribeInstances", "logs:PutLogEvents"], "Resource": "*"},
        {"Effect": "Deny", "Action": "*", "Resource": "arn:aws:s3:::secret/*"},
    )
    assert validate("aws-iam-no-wildcard-actions", "aws:iam/policy:Policy", {"policy": policy}) == []


def test_role_inline_policy_wildcard_fails():
    props = {
        "inlinePolicies": [
            {"name": "x", "policy": doc({"Effect": "Allow", "Action": "iam:*", "Resource": "*"})}
        ]
    }
    (message,) = validate("aws-iam-no-wildcard-actions", "aws:iam/role:Role", props)
    assert message.startswith("inline_policies[0] statement 1 allows wildcard actions iam:*")


def test_malformed_policy_document_is_reported():
    (message,) = validate("aws-iam-no-wildcard-actions", "aws:iam/policy:Policy", {"policy": "{not json"})
    assert message.startswith("policy is not valid JSON")


def test_notaction_allow_fails_deny_passes():
    policy = doc({"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"})
    (message,) = validate("aws-iam-no-notaction", "aws:iam/policy:Policy", {"policy": policy})
    assert "allows NotAction" in message
    policy = doc({"Effect": "Deny", "NotAction": ["s3:GetObject"], "Resource": "*"})
    assert validate("aws-iam-no-notaction", "aws:iam/policy:Policy", {"policy": policy}) == []


def test_passrole_on_any_resource_fails_scoped_passes():
    policy = doc({"Effect": "Allow", "Action": ["iam:PassRole"], "Resource": "*"})
    (message,) = validate("aws-iam-passrole-scoped", "aws:iam/rolePolicy:RolePolicy", {"policy": policy})
    assert "iam:PassRole on Resource '*'" in message and "role ARNs" in message
    policy = doc(
        {"Effect": "Allow", "Action": "iam:PassRole", "Resource": "arn:aws:iam::111122223333:role/node"}
    )
    assert validate("aws-iam-passrole-scoped", "aws:iam/rolePolicy:RolePolicy", {"policy": policy}) == []


@pytest.mark.parametrize("principal", ["*", {"AWS": "*"}, {"AWS": ["arn:aws:iam::111122223333:root", "*"]}])
def test_trust_policy_wildcard_principal_fails(principal):
    trust = doc({"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": principal})
    (message,) = validate(
        "aws-iam-trust-no-wildcard-principal", "aws:iam/role:Role", {"assumeRolePolicy": trust}
    )
    assert "any principal ('*')" in message


def test_trust_policy_service_principal_passes():
    trust = doc(
        {"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"Service": "ec2.amazonaws.com"}}
    )
    assert (
        validate("aws-iam-trust-no-wildcard-principal", "aws:iam/role:Role", {"assumeRolePolicy": trust})
        == []
    )
