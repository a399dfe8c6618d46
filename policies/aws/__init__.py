"""AWS's part of the pack: rules by concern, and the readers the common rules need."""

from ..cloud import CloudPolicies
from . import eks, encryption, exposure, fabric, identity, images, logs, operations, spot
from .readers import READERS

POLICIES = CloudPolicies(
    cloud="aws",
    rules=(*encryption.RULES, *exposure.RULES, *identity.RULES, *images.RULES, *spot.RULES, *fabric.RULES,
           *operations.RULES, *logs.RULES, *eks.RULES),
    readers=READERS,
)
