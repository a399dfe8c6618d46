"""The stack file contract: models, cross-field checks, `extends` resolution."""

from .errors import SpecError, SpecInvalid
from .image_stack import validate_images
from .models import CLUSTER_KEY, IMAGES_KEY, POLICY_KEY, ClusterSpec, ImagesSpec, NodeGroup
from .read import load_stack, stack_names, stack_path

__all__ = [
    "CLUSTER_KEY", "IMAGES_KEY", "POLICY_KEY", "ClusterSpec", "ImagesSpec", "NodeGroup", "SpecError",
    "SpecInvalid", "load_stack", "stack_names", "stack_path", "validate_images",
]
