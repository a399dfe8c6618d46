"""AWS image rule: a literal AMI id pinned in images/lock.yaml.

Each fires on a bad resource and passes a good one, through the SDK's own argument types.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest
from aws_rule_args import GOOD_AMI, LT, validate

from components.lock.image_ids import is_valid_image_id


class FakeLockError(Exception):
    pass


@pytest.fixture
def lock(monkeypatch):
    module = types.ModuleType("components.lock")
    state: dict[str, Any] = {"error": None}

    class Lock:
        def image_ids(self, cloud: str) -> set[str]:
            return {GOOD_AMI} if cloud == "aws" else set()

    def load_lock(path=None):
        if state["error"]:
            raise FakeLockError(state["error"])
        return Lock()

    module.load_lock = load_lock
    module.LockError = FakeLockError
    module.is_valid_image_id = is_valid_image_id  # the real id shapes: only the lock's contents are faked
    monkeypatch.setitem(sys.modules, "components.lock", module)
    return state


def test_image_from_ssm_fails(lock):
    props = {"imageId": "resolve:ssm:/aws/service/deeplearning/ami/x86_64/latest"}
    (message,) = validate("aws-image-pinned", LT, props)
    assert "resolves at launch time" in message and "images/lock.yaml" in message


def test_image_not_a_literal_ami_fails(lock):
    (message,) = validate("aws-image-pinned", LT, {"imageId": "my-golden-image"})
    assert "is not a literal AMI id" in message


def test_image_not_in_lock_fails_pinned_passes(lock):
    (message,) = validate("aws-image-pinned", LT, {"imageId": "ami-0fedcba9876543210"})
    assert "'ami-0fedcba9876543210' is not pinned in images/lock.yaml" in message
    assert validate("aws-image-pinned", LT, {"imageId": GOOD_AMI}) == []


def test_image_recipe_parent_image(lock):
    recipe = "aws:imagebuilder/imageRecipe:ImageRecipe"
    arn = "arn:aws:imagebuilder:us-east-1:aws:image/ubuntu-server-22-lts-x86/x.x.x"
    (message,) = validate("aws-image-pinned", recipe, {"parentImage": arn})
    assert message.startswith("parent_image") and "not a literal AMI id" in message
    assert validate("aws-image-pinned", recipe, {"parentImage": GOOD_AMI}) == []


def test_image_lock_unreadable_is_reported(lock):
    lock["error"] = "images/lock.yaml: profiles: missing"
    (message,) = validate("aws-image-pinned", LT, {"imageId": GOOD_AMI})
    assert "images/lock.yaml could not be read (images/lock.yaml: profiles: missing)" in message
