"""Alibaba Cloud's part of the pack: rules by concern, and the readers the common rules need (instance types,
a scaling group's size at max)."""

from ..cloud import CloudPolicies
from . import (
    ack,
    ack_rrsa,
    encryption,
    exposure,
    fabric,
    identity,
    images,
    lifecycle,
    operations,
    slurm_exposure,
    slurm_fabric,
    slurm_munge,
    spot,
)
from .readers import READERS

POLICIES = CloudPolicies(
    cloud="alicloud",
    rules=(*encryption.RULES, *exposure.RULES, *identity.RULES, *images.RULES, *spot.RULES, *lifecycle.RULES,
           *fabric.RULES, *operations.RULES, *ack.RULES, *ack_rrsa.RULES, *slurm_munge.RULES, *slurm_exposure.RULES,
           *slurm_fabric.RULES),
    readers=READERS,
)
