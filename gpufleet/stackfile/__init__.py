"""The stack file contract: models, cross-field checks, `extends` resolution.

The names below load on first use (lazy_loader, PEP 562): the catalog and the image lock read their files through
this package's errors alone, and commands that do not plan must not build the stack models to do so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import lazy_loader

if TYPE_CHECKING:  # for type checkers; at run time lazy_loader resolves each name
    from .config_keys import CLUSTER_KEY, IMAGES_KEY, POLICY_KEY  # noqa: F401
    from .errors import SpecError, SpecInvalid  # noqa: F401
    from .image_stack import validate_images  # noqa: F401
    from .models import ClusterSpec, ImagesSpec, NodeGroup  # noqa: F401
    from .read import load_stack, stack_names, stack_path  # noqa: F401

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "errors": ["SpecError", "SpecInvalid"],
        "image_stack": ["validate_images"],
        "config_keys": ["CLUSTER_KEY", "IMAGES_KEY", "POLICY_KEY"],
        "models": ["ClusterSpec", "ImagesSpec", "NodeGroup"],
        "read": ["load_stack", "stack_names", "stack_path"],
    },
)
