"""The root Pulumi program: read the stack config, validate it, build the cluster or image pipeline.

`pulumi up` runs it through __main__.py; `gpufleet plan` runs the same function under the mock engine.
A cluster whose image profile is unbaked in its region plans offline (the launch template shows it and an
advisory policy names the next command) but is refused by `pulumi up` and `pulumi preview` before any
resource: a preview that passed would promise a deploy that cannot boot.
"""

from __future__ import annotations

from pathlib import Path

import pulumi

from .catalog import load_catalog
from .lock import Lock
from .lock.status import next_steps
from .spec import CLUSTER_KEY, IMAGES_KEY, ClusterSpec, SpecInvalid, validate_cluster, validate_images
from .spec.rules import Context
from .spec.stackfile import resolve_extends
from .spec.validate import default_lock

STACKS_DIR = Path(__file__).resolve().parent.parent / "stacks"


def read_section(key: str) -> object | None:
    namespace, _, name = key.partition(":")
    return pulumi.Config(namespace).get_object(name)


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


def build() -> None:
    """Build what the stack's config asks for; invalid config stops the program with the field named."""
    config = {key: value for key in (CLUSTER_KEY, IMAGES_KEY) if (value := read_section(key)) is not None}
    config = config or from_template()
    if not config:
        raise pulumi.RunError(f"the stack sets neither {CLUSTER_KEY} nor {IMAGES_KEY}; see stacks/ for templates")
    try:
        config = resolve_extends(config, STACKS_DIR)
        if CLUSTER_KEY in config:
            build_cluster(config[CLUSTER_KEY])
        else:
            build_images(config[IMAGES_KEY])
    except SpecInvalid as invalid:
        raise pulumi.RunError(str(invalid)) from None


def running_offline() -> bool:
    """True under a Pulumi mock monitor (gpufleet's offline engine, unit tests), False under the Pulumi CLI.

    The CLI's engine connects a gRPC monitor; the mocks install the SDK's MockMonitor. A config key would
    not do: a stack file could set it and skip the refusal on a real deploy. `is_dry_run` would not either:
    `pulumi preview` is a dry run against the real engine.
    """
    from pulumi.runtime.mocks import MockMonitor

    return isinstance(pulumi.runtime.settings.get_monitor(), MockMonitor)


def refuse_unbaked_image(spec: ClusterSpec, lock: Lock) -> None:
    """Stop a real preview or deploy whose image profile has no baked image in its region yet."""
    entry = lock.image_entry(spec.image, spec.cloud, spec.region)
    if entry is None or entry.id is not None or running_offline():
        return
    raise pulumi.RunError(
        f"image profile {spec.image!r} has no baked {spec.cloud} image in {spec.region} "
        f"(images/lock.yaml: id null, status unbaked), so nothing was created: {next_steps(entry.stack)}; "
        "then run this again (`gpufleet plan` shows the cluster offline meanwhile)"
    )


def build_cluster(raw: object) -> None:
    lock = default_lock()
    catalog = load_catalog()
    spec = validate_cluster(raw, catalog, lock)
    refuse_unbaked_image(spec, lock)
    ctx = Context(catalog=catalog, lock=lock)
    if spec.cloud == "aws":
        from .clouds.aws.cluster import AwsGpuCluster

        cluster = AwsGpuCluster(spec, ctx)
        for key, value in cluster.outputs.items():
            pulumi.export(key, value)
    else:
        raise pulumi.RunError(f"cloud {spec.cloud!r} has no cluster component yet; aws is supported")


def build_images(raw: object) -> None:
    spec = validate_images(raw)
    if spec.cloud != "aws":
        raise pulumi.RunError(f"cloud {spec.cloud!r} has no image pipeline yet; aws is supported")
    from .clouds.aws.images_stack import build_aws_images

    for key, value in build_aws_images(spec).items():
        pulumi.export(key, value)
