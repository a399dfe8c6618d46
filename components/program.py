"""The root Pulumi program: read the stack config, validate it, build the cluster or image pipeline.

`pulumi up` runs it through __main__.py; `gpufleet plan` runs the same function under the mock engine.
"""

from __future__ import annotations

from pathlib import Path

import pulumi

from .catalog import load_catalog
from .spec import CLUSTER_KEY, IMAGES_KEY, SpecInvalid, validate_cluster, validate_images
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


def build_cluster(raw: object) -> None:
    lock = default_lock()
    catalog = load_catalog()
    spec = validate_cluster(raw, catalog, lock)
    ctx = Context(catalog=catalog, lock=lock)
    if spec.cloud == "aws":
        from .clouds.aws.cluster import AwsGpuCluster

        cluster = AwsGpuCluster(spec, ctx)
        for key, value in cluster.exports().items():
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
