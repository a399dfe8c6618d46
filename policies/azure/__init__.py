"""Azure's part of the pack: rules by concern, and the readers the common rules need (a scale set's VM size,
and its size at max: the autoscale setting's maximum, else sku.capacity)."""

from ..cloud import CloudPolicies
from . import aks, encryption, exposure, fabric, identity, images, operations, slurm_exposure, slurm_munge, spot
from .readers import READERS

POLICIES = CloudPolicies(
    cloud="azure",
    rules=(*encryption.RULES, *exposure.RULES, *identity.RULES, *images.RULES, *spot.RULES, *fabric.RULES,
           *operations.RULES, *aks.RULES, *slurm_munge.RULES, *slurm_exposure.RULES),
    readers=READERS,
)
