"""The root Pulumi program: read the stack config, validate it, build the cluster or image pipeline.

`pulumi up` runs it through __main__.py; `gpufleet plan` runs the same function under the mock engine.
A cluster whose image profile is unbaked in its region plans offline (the launch template shows it and an
advisory policy names the next command) but is refused by `pulumi up` and `pulumi preview` before any
resource: a preview that passed would promise a deploy that cannot boot. An image stack whose base image is
unconfirmed (null in the lock) is treated the same way: it plans, and a real run refuses it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pulumi

from components import runtime

from .clouds.lookup import backend
from .clouds.program import cloud_program
from .clouds.registry import CLOUDS
from .lock import load_lock
from .lock.status import next_steps
from .resolve import ResolvedCluster, resolve_cluster
from .stackfile import CLUSTER_KEY, IMAGES_KEY, ImagesSpec, SpecError, SpecInvalid, validate_images
from .stackfile.read import resolve_extends

STACKS_DIR = Path(__file__).resolve().parent.parent / "stacks"


def read_section(key: str) -> object | None:
    namespace, _, name = key.partition(":")
    return pulumi.Config(namespace).get_object(name)


def provider_regions() -> dict[str, str]:
    """Each cloud's provider region key that the stack sets (aws:region...), as the Pulumi CLI passes it."""
    found = {}
    for cloud in CLOUDS:
        key = backend(cloud).region_key
        namespace, _, name = key.partition(":")
        if (value := pulumi.Config(namespace).get(name)) is not None:
            found[key] = value
    return found


def from_template() -> dict[str, object]:
    """A stack made by `pulumi new` holds only the template prompts: start from the named stack."""
    settings = pulumi.Config("gpufleet")
    template = settings.get("template")
    if not template:
        return {}
    cluster: dict[str, object] = {"extends": template}
    for key in ("cloud", "region"):
        if (value := settings.get(key)) is not None:
            cluster[key] = value
    return {CLUSTER_KEY: cluster}


Prepared = ResolvedCluster | ImagesSpec


def prepare(config: Mapping[str, Any]) -> Prepared:
    """The stack's config (extends resolved) validated once: a resolved cluster or an image stack."""
    for key in (CLUSTER_KEY, IMAGES_KEY):
        if config.get(key) is not None and not isinstance(config[key], dict):
            raise SpecInvalid([SpecError(key, "must be a map of fields (see `gpufleet schema`)")])
    prepared: Prepared
    if config.get(CLUSTER_KEY) is not None:
        prepared = resolve_cluster(config[CLUSTER_KEY])
        cloud, region, field = prepared.spec.cloud, prepared.spec.region, f"{CLUSTER_KEY}.region"
    elif config.get(IMAGES_KEY) is not None:
        prepared = validate_images(config[IMAGES_KEY])
        cloud, region, field = prepared.cloud, prepared.regions[0], f"{IMAGES_KEY}.regions[0]"
    else:
        raise SpecInvalid([SpecError("config", f"set {CLUSTER_KEY} (a cluster) or {IMAGES_KEY} (an image build)")])
    # The provider deploys where its own region key says: a different one would build the cluster elsewhere.
    key = backend(cloud).region_key
    given = config.get(key)
    if given is not None and given != region:
        raise SpecInvalid([SpecError(key, f"is {given!r} but {field} is {region!r}; set both to the same region")])
    return prepared


def build(prepared: Prepared | None = None) -> None:
    """Build what the stack's config asks for; invalid config stops the program with the field named.

    The offline planner passes what it has prepared already, so a plan validates once.
    """
    try:
        if prepared is None:
            config = {key: value for key in (CLUSTER_KEY, IMAGES_KEY) if (value := read_section(key)) is not None}
            # The provider keys join before `extends` is resolved: it refuses a base's provider key this stack lacks.
            config = resolve_extends({**(config or from_template()), **provider_regions()}, STACKS_DIR)
            prepared = prepare(config)
    except SpecInvalid as invalid:
        raise pulumi.RunError(str(invalid)) from None
    if isinstance(prepared, ImagesSpec):
        refuse_unconfirmed_base_image(prepared)
        outputs = cloud_program(prepared.cloud).build_images(prepared)
    else:
        refuse_unbaked_image(prepared)
        outputs = cloud_program(prepared.spec.cloud).build_cluster(prepared)
    for key, value in outputs.items():
        pulumi.export(key, value)


def refuse_unbaked_image(cluster: ResolvedCluster) -> None:
    """Stop a real preview or deploy whose image profile has no baked image in its region yet."""
    spec = cluster.spec
    entry = cluster.image
    if entry is None or entry.id is not None or runtime.running_offline():
        return
    raise pulumi.RunError(
        f"image profile {spec.image!r} has no baked {spec.cloud} image in {spec.region} "
        f"(images/lock.yaml: id null, status unbaked), so nothing was created: {next_steps(entry.stack)}; "
        "then run this again (`gpufleet plan` shows the cluster offline meanwhile)"
    )


def refuse_unconfirmed_base_image(spec: ImagesSpec) -> None:
    """Stop a real preview or deploy of an image stack whose build region has no confirmed base image."""
    base = load_lock().base_image_entry(spec.cloud, spec.regions[0])
    if base is None or base.status != "unconfirmed" or runtime.running_offline():
        return
    raise pulumi.RunError(
        f"images/lock.yaml base_images.{spec.cloud}.{spec.regions[0]}: parent_image is null (status "
        f"{base.status}), so nothing was created: {base.note} Pin the confirmed image there, then run this again "
        "(`gpufleet plan` shows the image stack offline meanwhile)"
    )
