"""Instance catalog: GPU, fabric and price facts as data, with their sources."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ..clouds.registry import CLOUDS, Cloud
from ..yaml_model import load_yaml_model
from .mig import MigFacts, MigGpu, load_mig_facts
from .model import CloudCatalog, Fabric, FabricKind, Gpu, InstanceType, Limit, LocalNvme, Price, SystemType
from .pricing import hourly_cost, most_expensive

DATA_DIR = Path(__file__).parent / "data"

__all__ = [
    "CLOUDS", "Catalog", "Cloud", "Fabric", "FabricKind", "Gpu", "InstanceType", "Limit", "LocalNvme", "MigFacts",
    "MigGpu", "Price", "SystemType", "hourly_cost", "load_catalog", "load_mig_facts", "most_expensive",
]


class Catalog:
    """Queries over every cloud's catalog."""

    def __init__(self, clouds: dict[str, CloudCatalog]) -> None:
        self._clouds = clouds

    def get(self, cloud: str, name: str) -> InstanceType | None:
        catalog = self._clouds.get(cloud)
        return catalog.instances.get(name) if catalog else None

    def limit(self, cloud: str, name: str) -> int | str:
        """A published limit of `cloud` (catalog data with its source); KeyError when the data lacks it."""
        return self._clouds[cloud].limits[name].value

    def limits(self, cloud: str) -> dict[str, int | str]:
        """Every published limit of `cloud`, for checks that apply only where the cloud has the limit."""
        catalog = self._clouds.get(cloud)
        return {name: limit.value for name, limit in catalog.limits.items()} if catalog else {}

    def build_type_names(self, cloud: str) -> list[str]:
        """Every type `cloud`'s image pipeline may build on: its build types, then its GPU types."""
        catalog = self._clouds.get(cloud)
        return [*sorted(catalog.build_types), *sorted(catalog.instances)] if catalog else []

    def system_type(self, cloud: str, name: str | None) -> tuple[str, SystemType] | None:
        """The system group's type: `name`, or the cloud's default where name is None; None where the catalog lacks
        it (the checks refuse it)."""
        catalog = self._clouds.get(cloud)
        if catalog is None:
            return None
        if name is None:
            return next(((n, row) for n, row in catalog.system_types.items() if row.default), None)
        row = catalog.system_types.get(name)
        return (name, row) if row is not None else None

    def priced(self, cloud: str, name: str) -> InstanceType | SystemType | None:
        """The row a type is priced by: a GPU instance type, or a system group's CPU type."""
        found = self.get(cloud, name) or self.system_type(cloud, name)
        return found[1] if isinstance(found, tuple) else found

    def system_type_names(self, cloud: str) -> list[str]:
        catalog = self._clouds.get(cloud)
        return sorted(catalog.system_types) if catalog else []

    def names(self, cloud: str) -> list[str]:
        catalog = self._clouds.get(cloud)
        return sorted(catalog.instances) if catalog else []

    def instances(self, cloud: str | None = None, gpu: str | None = None) -> list[InstanceType]:
        found = [
            inst
            for name in sorted(self._clouds)
            if cloud is None or name == cloud
            for inst in self._clouds[name].instances.values()
            if gpu is None or inst.gpu.model.lower() == gpu.lower()
        ]
        return sorted(found, key=lambda i: (i.cloud, i.name))


@lru_cache(maxsize=1)
def load_catalog(data_dir: Path = DATA_DIR) -> Catalog:
    """Load and validate every data/<cloud>.yaml; a malformed file raises SpecInvalid naming every field."""
    clouds = {}
    for path in sorted(data_dir.glob("*.yaml")):
        catalog = load_yaml_model(path, CloudCatalog)
        clouds[catalog.cloud] = catalog
    return Catalog(clouds)
