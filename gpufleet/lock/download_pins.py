"""A download or apt repository the image bake fetches, with what verifies it (sha256, a vendor signature by a pinned
key, or an apt repository's pinned key): the lock's unit for fabric stacks, node agents and Slurm's pieces."""

from __future__ import annotations

from pydantic import Field, model_validator

from ..yaml_model import StrictModel


class FabricComponent(StrictModel):
    """One piece of a cloud's RDMA stack (EFA installer, aws-ofi-nccl, DOCA-OFED, eRDMA)."""

    version: str = Field(..., min_length=1)
    url: str | None = None
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    bundled_in: str | None = Field(None, description="installed by this other component, not on its own")
    signature_url: str | None = Field(None, description="detached PGP signature of url (verified with gpgv)")
    pgp_key_url: str | None = Field(None, description="where the signing key is fetched (trusted by fingerprint)")
    pgp_fingerprint: str | None = Field(
        None, pattern=r"^[0-9A-F]{40}$", description="primary key that must have made signature_url's signature"
    )
    key_url: str | None = Field(None, description="an apt repository's signing key (url is the repository)")
    key_fingerprint: str | None = Field(
        None, pattern=r"^[0-9A-F]{40}$", description="the one primary key key_url must hold (null: unconfirmed)"
    )
    release: str | None = Field(
        None, pattern=r"^https?://\S+/releases/tags/\S+$",
        description="the GitHub REST API's release that lists url as an asset (GET /repos/OWNER/REPO/releases/tags/"
        "TAG): `lock resolve` reads sha256 from the asset's digest (images/lock.resolved.yaml)")
    unconfirmed: str | None = Field(None, description="why sha256 (or another field) is left null")

    def unverified(self) -> tuple[str, str] | None:
        """The missing field and why the bake would refuse this component's download (None: it is checked). A fetched
        file needs a sha256, a signature by a pinned key, or a GitHub release whose digest `lock resolve` records (an
        unread one is an unresolved fact, which the image stack's plan names and its bake refuses); an apt repository
        (key_url) a pinned key fingerprint."""
        if self.key_url is not None:
            return None if self.key_fingerprint else ("key_fingerprint", f"key_url {self.key_url} has no fingerprint")
        if self.url is None or self.sha256 or self.pgp_fingerprint or self.release:
            return None
        return "sha256", (f"url {self.url} has no sha256, nor signature_url with pgp_key_url and pgp_fingerprint, nor "
                          "a GitHub release to read its digest from")

    @model_validator(mode="after")
    def _signature_names_its_key(self) -> FabricComponent:
        if not (self.signature_url is None) == (self.pgp_fingerprint is None) == (self.pgp_key_url is None):
            raise ValueError("signature_url, pgp_key_url and pgp_fingerprint go together: a signature is checked "
                             "against one key")
        return self
