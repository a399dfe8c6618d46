"""Pins of the components a Kubernetes cluster runs inside itself (images/lock.yaml `kubernetes_components`).

Each component names the upstream release its manifests were rendered from (components/kubernetes/manifests/) and
the images it runs, by tag and digest. A digest is written only where a source lists it; otherwise it is null with
a note saying how to read it, the offline plan shows the image by tag (an advisory rule names it) and a real
`pulumi up` refuses the cluster (components/kubernetes/pins.py), as it refuses an unbaked node image.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from ..yaml_model import StrictModel

DIGEST = r"^sha256:[0-9a-f]{64}$"
IMAGE = r"^[a-z0-9.-]+(:[0-9]+)?/[a-z0-9._/-]+:[A-Za-z0-9._-]+$"


class ImagePin(StrictModel):
    """One container image: `repository:tag`, and its digest where a source lists it."""

    image: str = Field(..., pattern=IMAGE,
                       description="registry/repository:tag, never a digest (that is `digest`)")
    digest: str | None = Field(..., pattern=DIGEST, description="the manifest (list) digest; null: none citable")
    digest_source: str | None = Field(None, description="where the digest was read (repository, path, commit)")
    unconfirmed: str | None = Field(None, description="digest null: how to read it before a deploy")

    @model_validator(mode="after")
    def _digest_has_a_source(self) -> ImagePin:
        if self.digest is not None and not self.digest_source:
            raise ValueError("digest needs digest_source: never a digest nobody can trace")
        if self.digest is None and not self.unconfirmed:
            raise ValueError("digest is null: say in `unconfirmed` how to read it")
        if self.digest is not None and self.unconfirmed:
            raise ValueError("unconfirmed goes with a null digest only")
        return self

    @property
    def reference(self) -> str:
        """What a pod spec names: `repository:tag@digest`, or `repository:tag` while the digest is unconfirmed."""
        return f"{self.image}@{self.digest}" if self.digest else self.image


class ComponentPin(StrictModel):
    """One in-cluster component: the upstream release its manifests come from and the images it runs."""

    version: str = Field(..., min_length=1, description="the chart (or release) version the manifests render")
    app_version: str = Field(..., min_length=1)
    source: str = Field(..., min_length=10, description="repository, path and commit the manifests came from")
    images: dict[str, ImagePin] = Field(..., min_length=1)


class NodeCheckPin(StrictModel):
    """The image the node-check DaemonSet runs (components/kubernetes/node_check.py): the project's node check
    (images/nodecheck) with Python and pynvml. No image is published yet: `image` stays null and a real run refuses
    the cluster until one is built, pushed and pinned here by digest."""

    image: str | None = Field(..., pattern=IMAGE)
    digest: str | None = Field(..., pattern=DIGEST)
    unconfirmed: str | None = None

    @model_validator(mode="after")
    def _pinned_or_said_why(self) -> NodeCheckPin:
        if (self.image is None or self.digest is None) and not self.unconfirmed:
            raise ValueError("image or digest is null: say in `unconfirmed` what is missing")
        return self

    @property
    def images(self) -> dict[str, ImagePin]:
        """No ImagePin while the image is unpublished (ImagePin needs a name); its refusal is unconfirmed_images'."""
        return {}

    @property
    def reference(self) -> str:
        """What the pod spec names; UNPUBLISHED (a name no registry serves) while no image is pinned."""
        if self.image is None:
            return UNPUBLISHED
        return f"{self.image}@{self.digest}" if self.digest else self.image


UNPUBLISHED = "gpufleet-nodecheck:unpublished"


class KubernetesComponents(StrictModel):
    """Every component InCluster creates. The autoscaler's images are keyed by Kubernetes minor version: its minor
    must match the cluster's (kubernetes/autoscaler cluster-autoscaler/README.md, "Releases")."""

    nvidia_device_plugin: ComponentPin
    node_feature_discovery: ComponentPin
    efa_device_plugin: ComponentPin
    dcgm_exporter: ComponentPin
    cluster_autoscaler: ComponentPin
    node_termination_handler: ComponentPin
    gpu_operator: ComponentPin
    network_operator: ComponentPin
    mpi_operator: ComponentPin
    training_operator: ComponentPin
    node_check: NodeCheckPin

    def unconfirmed(self) -> list[tuple[str, ImagePin]]:
        """(component.image key, pin) of every image whose digest is null."""
        found = []
        for component, pin in self:
            found += [(f"{component}.images.{key}", image) for key, image in pin.images.items() if image.digest is None]
        return found

    def unconfirmed_images(self) -> dict[str, str]:
        """`repository:tag` -> why its digest is null, for every image pinned by tag only (policies read it)."""
        found = {image.image: image.unconfirmed or "" for _, image in self.unconfirmed()}
        if self.node_check.image is None or self.node_check.digest is None:
            found[self.node_check.image or UNPUBLISHED] = self.node_check.unconfirmed or ""
        return found
