"""Image lock: pinned driver/CUDA/fabric stacks and image ids (images/lock.yaml), its loader and checks."""

from __future__ import annotations

from .check import LockProblem, check_lock
from .image_ids import is_valid_image_id
from .install_env import render_install_env
from .loader import DEFAULT_LOCK_PATH, LockError, load_lock
from .model import FABRIC_COMPONENTS, DriverBranch, FabricComponent, ImageEntry, Lock, Profile

__all__ = [
    "DEFAULT_LOCK_PATH", "FABRIC_COMPONENTS", "DriverBranch", "FabricComponent", "ImageEntry", "Lock", "LockError",
    "LockProblem", "Profile", "check_lock", "is_valid_image_id", "load_lock", "render_install_env",
]
