"""Kubernetes rules, the same on every cloud's cluster: images by digest, no privileged pods beyond the device
plugins, GPU pods tolerating the GPU taint by its documented key. They read the kubernetes provider's resources,
so a stack without Kubernetes has nothing for them to judge."""

from ..cloud import CloudPolicies, Readers
from . import images, privileged, tolerations

POLICIES = CloudPolicies(
    cloud="kubernetes",
    rules=(*images.RULES, *privileged.RULES, *tolerations.RULES),
    readers=Readers(),
)
