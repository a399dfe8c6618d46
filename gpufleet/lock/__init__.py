"""Image lock: pinned driver/CUDA/fabric stacks and image ids (images/lock.yaml), its loader and checks.

The names below load on first use (lazy_loader, PEP 562): the policy pack reads image id shapes and tag names from
this package's small modules, and listing its rules must not build the lock's models or load the catalog.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import lazy_loader

if TYPE_CHECKING:  # for type checkers; at run time lazy_loader resolves each name
    from .check import LockProblem, check_lock  # noqa: F401
    from .image_ids import is_valid_image_id  # noqa: F401
    from .install_env import render_install_env  # noqa: F401
    from .loader import DEFAULT_LOCK_PATH, LockError, load_lock  # noqa: F401
    from .model import FABRIC_COMPONENTS, DriverBranch, FabricComponent, ImageEntry, Lock, Profile  # noqa: F401

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "check": ["LockProblem", "check_lock"],
        "image_ids": ["is_valid_image_id"],
        "install_env": ["render_install_env"],
        "loader": ["DEFAULT_LOCK_PATH", "LockError", "load_lock"],
        "model": ["FABRIC_COMPONENTS", "DriverBranch", "FabricComponent", "ImageEntry", "Lock", "Profile"],
    },
)
