"""AWS's part of the pack: rules by concern, and the readers the common rules need."""

from ..cloud import CloudPolicies
from . import (
    eks,
    encryption,
    exposure,
    fabric,
    identity,
    images,
    logs,
    operations,
    slurm_exposure,
    slurm_fabric,
    slurm_munge,
    spot,
)
from .readers import READERS

POLICIES = CloudPolicies(
    cloud="aws",
    rules=(*encryption.RULES, *exposure.RULES, *identity.RULES, *images.RULES, *spot.RULES, *fabric.RULES,
           *operations.RULES, *logs.RULES, *eks.RULES, *slurm_munge.RULES, *slurm_exposure.RULES,
           *slurm_fabric.RULES),
    readers=READERS,
)
