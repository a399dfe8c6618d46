"""AWS image rule: a literal AMI id pinned in images/lock.yaml.

Each fires on a bad resource and passes a good one, through the SDK's own argument types.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest
from aws_rule_args import GOOD_AMI, LT, validate

from gpufleet.lock.image_ids import is_valid_image_id
from policies.registry import RULES_BY_NAME


class FakeLockError(Exception):
    pass


@pytest.fixture
def lock(monkeypatch):
    module = types.ModuleType("gpufleet.lock")
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
    monkeypatch.setitem(sys.modules, "gpufleet.lock", module)
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
    assert message.startswith("parent_image") and "is not a pinnable parent image" in message
    assert validate("aws-image-pinned", recipe, {"parentImage": GOOD_AMI}) == []
    ssm = "ssm:/aws/service/canonical/ubuntu/server/22.04/stable/current/amd64/hvm/ebs-gp2/ami-id"
    (message,) = validate("aws-image-pinned", recipe, {"parentImage": ssm})
    assert "is not pinned in images/lock.yaml: use the parent image pinned in images/lock.yaml base_images" in message


UNBAKED_TAGS = {"gpufleet:image-profile": "cuda12.8-r580", "gpufleet:image-status": "unbaked",
                "gpufleet:image-stack": "aws-images"}


def test_unbaked_launch_template_is_advisory_and_names_the_pin_command(lock):
    (message,) = validate("aws-image-unbaked", LT, {"tags": UNBAKED_TAGS})
    assert "image profile 'cuda12.8-r580' is not baked for this region yet" in message
    assert "`pulumi up --stack aws-images`" in message and "`gpufleet images pin --stack aws-images`" in message
    assert RULES_BY_NAME["aws-image-unbaked"].policy.enforcement_level.value == "advisory"
    # The mandatory rule leaves an unbaked template to this one, and still refuses an unmarked missing id.
    assert validate("aws-image-pinned", LT, {"tags": UNBAKED_TAGS}) == []
    (missing,) = validate("aws-image-pinned", LT, {"tags": {"team": "ml"}, "userData": "I2Nsb3VkLWNvbmZpZw=="})
    assert missing.startswith("image_id is not set")


def test_a_template_only_an_eks_managed_node_group_can_boot_passes(lock):
    # Neither an image nor user data: EKS supplies both from the node group's amiType (the system group); a
    # self-managed group could not launch from it at all. With user data, a missing image is still refused.
    assert validate("aws-image-pinned", LT, {"tags": {"team": "ml"}}) == []
    assert validate("aws-node-gpu-metrics", LT, {"tags": {"team": "ml"}}) == []
    (metrics,) = validate("aws-node-gpu-metrics", LT, {"userData": "I2Nsb3VkLWNvbmZpZw=="})
    assert "ships no GPU metrics" in metrics


def test_baked_launch_template_passes_the_unbaked_rule(lock):
    baked = {**UNBAKED_TAGS, "gpufleet:image-status": "baked"}
    assert validate("aws-image-unbaked", LT, {"imageId": GOOD_AMI, "tags": baked}) == []
    assert validate("aws-image-unbaked", LT, {"imageId": GOOD_AMI}) == []
    # No stack bakes it yet (Azure, Alibaba): the message says so instead of naming one.
    (message,) = validate("aws-image-unbaked", LT, {"tags": {k: v for k, v in UNBAKED_TAGS.items()
                                                             if k != "gpufleet:image-stack"}})
    assert "no image stack bakes it yet" in message


def test_image_lock_unreadable_is_reported(lock):
    lock["error"] = "images/lock.yaml: profiles: missing"
    (message,) = validate("aws-image-pinned", LT, {"imageId": GOOD_AMI})
    assert "images/lock.yaml could not be read (images/lock.yaml: profiles: missing)" in message
