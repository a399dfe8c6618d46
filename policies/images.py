"""Access to the image lock (components.lock): id shapes and unbaked-image tags at import (constants only),
the lock file itself lazily, only when a rule needs it."""

from __future__ import annotations

import importlib
from types import ModuleType

from components.lock.image_ids import AWS_AMI as AMI_ID
from components.lock.image_ids import EXPECTED_PARENT_SHAPE, is_valid_parent_image
from components.lock.status import PROFILE_TAG, STACK_TAG, STATUS_TAG, UNBAKED, next_steps

__all__ = [
    "AMI_ID", "EXPECTED_PARENT_SHAPE", "PROFILE_TAG", "STACK_TAG", "STATUS_TAG", "UNBAKED",
    "is_valid_parent_image", "lock_module", "next_steps",
]


def lock_module() -> ModuleType:
    """components.lock, imported lazily so that importing the rules reads no file."""
    return importlib.import_module("components.lock")
