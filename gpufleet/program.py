"""The root Pulumi program: read the stack config, validate it, build the cluster or image pipeline.

`pulumi up` runs it through __main__.py; `gpufleet plan` runs the same function under the mock engine.
A cluster whose image profile is unbaked in its region plans offline (the launch template shows it and an
advisory policy names the next command) but is refused by `pulumi up` and `pulumi preview` before any
resource: a preview that passed would promise a deploy that cannot boot. An image stack whose base image is
unconfirmed (null in the lock) is treated the same way: it plans, and a real run refuses it.
"""

from __future__ import annotations

import pulumi

from components import runtime

from .clouds.backend import ResolvedCluster
from .clouds.lookup import backend
from .clouds.program import cloud_program
from .clouds.registry import CLOUDS
from .lock import load_lock
from .lock.status import next_steps
from .prepare import Prepared, prepare
from .stackfile.config_keys import CLUSTER_KEY, IMAGES_KEY
from .stackfile.errors import SpecInvalid
from .stackfile.keys import PROVIDER_ACCOUNT_KEYS
from .stackfile.models import ImagesSpec
from .stackfile.placeholders import placeholders
from .stackfile.read import STACKS_DIR, resolve_extends


def read_section(key: str) -> object | None:
    namespace, _, name = key.partition(":")
    return pulumi.Config(namespace).get_object(name)


def provider_settings() -> dict[str, str]:
    """Each cloud's provider region key (aws:region...) and account key (aws:allowedAccountIds...) that the stack
    sets, as the Pulumi CLI passes them."""
    found = {}
    for key in (*(backend(cloud).region_key for cloud in CLOUDS), *PROVIDER_ACCOUNT_KEYS):
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


def build(prepared: Prepared | None = None) -> None:
    """Build what the stack's config asks for; invalid config stops the program with the field named.

    The offline planner passes what it has prepared already, so a plan validates once.
    """
    try:
        if prepared is None:
            config = {key: value for key in (CLUSTER_KEY, IMAGES_KEY) if (value := read_section(key)) is not None}
            # The provider keys join before `extends` is resolved: it refuses a base's provider key this stack lacks.
            config = resolve_extends({**(config or from_template()), **provider_settings()}, STACKS_DIR)
            prepared = prepare(config)
    except SpecInvalid as invalid:
        raise pulumi.RunError(str(invalid)) from None
    refuse_placeholders(prepared)
    if isinstance(prepared, ImagesSpec):
        refuse_unconfirmed_base_image(prepared)
        refuse_unresolved_facts(prepared)
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
    if entry is None or entry.id is not None:
        return
    runtime.refuse("image", (
        f"profile {spec.image!r} has no baked {spec.cloud} image in {spec.region} (images/lock.yaml: id null, status "
        f"unbaked), so a real run creates nothing: {next_steps(entry.stack)}; then run it again"))


def refuse_unconfirmed_base_image(spec: ImagesSpec) -> None:
    """Stop a real preview or deploy of an image stack whose build region has no confirmed base image."""
    entries = load_lock().base_image_entries(spec.cloud, spec.regions[0])
    mode, base = next(((m, b) for m, b in entries.items() if b.status == "unconfirmed"), (None, None))
    if base is None:
        return
    where = f"{spec.cloud}.{spec.regions[0]}" + (f".{mode}" if mode else "")
    runtime.refuse(f"images/lock.yaml base_images.{where}", (
        f"parent_image is null (status {base.status}), so a real run creates nothing: {base.note} Pin the confirmed "
        "image there, then run it again"))


def refuse_placeholders(prepared: Prepared) -> None:
    """Stop a real run on a value the template left for the user to replace (a fork inherits it silently)."""
    spec = prepared if isinstance(prepared, ImagesSpec) else prepared.spec
    for problem in placeholders(spec.model_dump(mode="json")):
        runtime.refuse(problem.path, problem.message)


def refuse_unresolved_facts(spec: ImagesSpec) -> None:
    """Stop a real deploy of an image stack while a fact its bake relies on was never read from its source (or was
    read otherwise than the lock pins), before the build network exists; a preview goes on with a warning, so a pull
    request shows its diff before the facts land."""
    from datetime import datetime, timezone

    from .lock.fact_status import fact_findings
    from .lock.needs import image_stack_needs

    needs = image_stack_needs(load_lock(), spec.profile, spec.cloud, spec.regions[0])
    found = [f for f in fact_findings(needs, load_lock().resolved, datetime.now(timezone.utc))
             if f.status != "stale"]
    if not found:
        return
    reasons = "; ".join(f"{f.field}: {f.message}" for f in found)
    runtime.refuse_unread(f"images/lock.yaml: {len(found)} fact(s) the bake of {spec.profile!r} relies on are "
                          f"unresolved, so nothing was created: {reasons}")
