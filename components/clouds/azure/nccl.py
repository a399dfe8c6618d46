"""Which /etc/nccl.conf an Azure InfiniBand node writes: the VM family whose NCCL settings and topology file
Azure/azhpc-images ships, by VM size as Azure/azhpc-images components/setup_sku_customizations.sh (@8e9d055f, lines
27-36) derives it: `standard_nd*v4` -> ndv4 (ND A100 v4), `standard_nd96is*_h[1-2]00_v5` -> ndv5 (ND H100 v5, ND H200
v5). The node writes the file at boot (components/bootstrap/scripts/nccl-conf.sh)."""

from __future__ import annotations

from fnmatch import fnmatchcase

# (VM size pattern, lower case, as setup_sku_customizations.sh matches it; azhpc-images family).
FAMILIES = (("standard_nd*v4", "ndv4"), ("standard_nd96is*_h[1-2]00_v5", "ndv5"))


def nccl_family(vm_size: str, rdma: bool) -> str | None:
    """The azhpc-images family of an InfiniBand group's VM size; None off InfiniBand or for another size."""
    if not rdma:
        return None
    size = vm_size.lower()
    return next((family for pattern, family in FAMILIES if fnmatchcase(size, pattern)), None)
