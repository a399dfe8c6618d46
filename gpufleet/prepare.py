"""A stack's config (its `extends` resolved) validated once: a resolved cluster or an image stack.

The root program builds from it, the offline planner plans it, and the policy pack derives its settings from it
(policies/stack_settings.py), so all three judge the same validated stack.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .clouds.backend import ResolvedCluster
from .clouds.lookup import backend
from .clouds.registry import CLOUDS
from .resolve import resolve_cluster
from .stackfile.checks import stack_accounts
from .stackfile.config_keys import CLUSTER_KEY, IMAGES_KEY
from .stackfile.errors import SpecError, SpecInvalid
from .stackfile.image_stack import validate_images
from .stackfile.keys import account_problem, provider_accounts
from .stackfile.models import ImagesSpec

Prepared = ResolvedCluster | ImagesSpec


def prepare(config: Mapping[str, Any]) -> Prepared:
    """The stack's config (extends resolved) validated once: a resolved cluster or an image stack."""
    for key in (CLUSTER_KEY, IMAGES_KEY):
        if config.get(key) is not None and not isinstance(config[key], dict):
            raise SpecInvalid([SpecError(key, "must be a map of fields (see `gpufleet schema`)")])
    if config.get(CLUSTER_KEY) is not None and config.get(IMAGES_KEY) is not None:
        # One stack is one thing: a second section would sit in the file unbuilt and unjudged.
        raise SpecInvalid([SpecError("config", f"set {CLUSTER_KEY} (a cluster) or {IMAGES_KEY} (an image build), "
                                               "not both")])
    key = CLUSTER_KEY if config.get(CLUSTER_KEY) is not None else IMAGES_KEY
    if config.get(key) is None:
        raise SpecInvalid([SpecError("config", f"set {CLUSTER_KEY} (a cluster) or {IMAGES_KEY} (an image build)")])
    try:
        prepared: Prepared = resolve_cluster(config[key]) if key == CLUSTER_KEY else validate_images(config[key])
    except SpecInvalid as invalid:
        # The provider's region is judged too, so a file's errors come in one round.
        raise SpecInvalid([*invalid.errors, *_provider_region_problems(config, key)]) from None
    accounts = provider_account_problems(prepared, provider_accounts(config))
    problems = [*_provider_region_problems(config, key), *accounts]
    if problems:
        raise SpecInvalid(problems)
    return prepared


def _provider_region_problems(config: Mapping[str, Any], key: str) -> list[SpecError]:
    """The provider deploys where its own region key says: a different one would build the stack elsewhere. Read off
    the section as written, so it is judged whether or not the rest validates."""
    section = config[key]
    cloud, region = section.get("cloud"), section.get("region")
    field = f"{key}.region"
    if key == IMAGES_KEY:
        regions = section.get("regions")
        region, field = (regions[0] if isinstance(regions, list) and regions else None), f"{key}.regions[0]"
    if cloud not in CLOUDS or not isinstance(region, str):
        return []
    region_key = backend(cloud).region_key
    given = config.get(region_key)
    if given is not None and given != region:
        return [SpecError(region_key, f"is {given!r} but {field} is {region!r}; set both to the same region")]
    return []


def provider_account_problems(prepared: Prepared, accounts: frozenset[str]) -> list[SpecError]:
    """Brought keys of another account than the one the stack's provider settings name (the provider deploys there
    and nowhere else), unless the organisation grants it: the spec's own check compares with the ARNs it names."""
    if not accounts:
        return []
    if isinstance(prepared, ImagesSpec):
        keys = {"kms_key": getattr(prepared, "kms_key", None),
                **{f"replica_kms_keys.{r}": k for r, k in (getattr(prepared, "replica_kms_keys", None) or {}).items()}}
    else:
        own = accounts | stack_accounts(prepared.spec)
        keys = {"storage.kms_key": prepared.spec.storage.kms_key,
                "storage.key_vault_id": getattr(prepared.spec.storage, "key_vault_id", None)}
        accounts = own
    return [SpecError(field, problem) for field, key in keys.items()
            if isinstance(key, str) and key != "create" and (problem := account_problem(key, accounts))]
