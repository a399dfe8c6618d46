"""Alibaba Cloud RAM wildcard rule and image rules. Each fires on a bad resource and passes a good one."""

from __future__ import annotations

import json

from alicloud_rule_args import LT, RAM_POLICY, SC, validate

from gpufleet.lock import load_lock

RAM = "alicloud-ram-no-wildcard-actions"


def document(*actions: str, effect: str = "Allow") -> str:
    return json.dumps({"Version": "1", "Statement": [{"Effect": effect, "Action": list(actions), "Resource": "*"}]})


def test_wildcard_actions_fail():
    (message,) = validate(RAM, RAM_POLICY, {"policyDocument": document("oss:GetObject", "ecs:*")})
    assert message == (
        "policy_document statement 1 allows wildcard actions ecs:*: list the exact actions the nodes need"
    )
    (message,) = validate(RAM, RAM_POLICY, {"statements": [{"effect": "Allow", "actions": ["*"]}]})
    assert message.startswith("statements[0] allows wildcard actions *")


def test_exact_actions_and_deny_wildcards_pass():
    props = {"policyDocument": document("oss:GetObject", "cms:PutCustomMetric")}
    assert validate(RAM, RAM_POLICY, props) == []
    assert validate(RAM, RAM_POLICY, {"policyDocument": document("*", effect="Deny")}) == []


def test_malformed_document_fails():
    (message,) = validate(RAM, RAM_POLICY, {"policyDocument": "{not json"})
    assert message.startswith("the policy document is malformed")


def test_image_not_set_or_not_pinned_fails():
    (message,) = validate("alicloud-image-pinned", SC, {})
    assert message.startswith("image_id is not set")
    (message,) = validate("alicloud-image-pinned", LT, {"imageId": "ubuntu_latest"})
    assert "is not a literal image id" in message
    (message,) = validate("alicloud-image-pinned", SC, {"imageId": "m-abcdefghij0123456789"})
    assert "is not pinned in images/lock.yaml" in message


def test_pinned_image_passes(monkeypatch):
    lock = load_lock()
    monkeypatch.setattr(type(lock), "image_ids", lambda self, cloud: {"m-abcdefghij0123456789"})
    assert validate("alicloud-image-pinned", SC, {"imageId": "m-abcdefghij0123456789"}) == []


def test_unbaked_image_is_reported_by_the_advisory_rule_only():
    tags = {"gpufleet:image-profile": "cuda12.8-r580", "gpufleet:image-status": "unbaked",
            "gpufleet:image-stack": "alicloud-images"}
    assert validate("alicloud-image-pinned", SC, {"tags": tags}) == []
    (message,) = validate("alicloud-image-unbaked", SC, {"tags": tags})
    assert "not baked for this region yet" in message and "gpufleet images pin --stack alicloud-images" in message
    assert validate("alicloud-image-unbaked", SC, {"imageId": "m-abcdefghij0123456789", "tags": tags}) == []
