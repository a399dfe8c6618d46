"""The Azure image carries the NCCL topology file of every InfiniBand VM family the node's gpufleet-nccl-conf names
(components/clouds/azure/nccl.py FAMILIES): azhpc-images' own files, installed where azhpc-images puts them."""

from __future__ import annotations

import hashlib
import io
import subprocess
import tarfile
import xml.etree.ElementTree as ElementTree
from gzip import decompress
from pathlib import Path

from conftest import REPO

from components.clouds.azure.nccl import FAMILIES
from gpufleet.lock import load_lock
from gpufleet.lock.bundle import pack

TOPOLOGY = REPO / "images" / "install" / "azure-topology"
# sha256 of Azure/azhpc-images topology/<family>-topo.xml at commit 8e9d055f (the files as that commit holds them).
PUBLISHED = {
    "ndv4": "c3583efb0b6e53f52410e32643b46bb6af99f5f34dcebc1868c47c233f84d2cf",
    "ndv5": "c26ff47f1decf03d44ee6e90c4a8afd3bddeec334c5545008f33af2a297e2834",
}


def test_every_family_has_azhpc_images_own_topology_file() -> None:
    families = {family for _, family in FAMILIES}
    assert families == set(PUBLISHED)
    for family in families:
        data = (TOPOLOGY / f"{family}-topo.xml").read_bytes()
        assert hashlib.sha256(data).hexdigest() == PUBLISHED[family], family
        assert ElementTree.fromstring(data).tag == "system"  # NCCL's topology document


def test_the_azure_bundle_installs_them_under_opt_microsoft(tmp_path: Path) -> None:
    profile = next(iter(load_lock().profiles.values()))
    with tarfile.open(fileobj=io.BytesIO(decompress(pack(profile, "azure")))) as bundle:
        bundle.extractall(tmp_path / "bundle", filter="data")
    root = tmp_path / "root"
    done = subprocess.run(["bash", str(tmp_path / "bundle/images/install/azure-topology.sh")],
                          env={"GPUFLEET_ROOT": str(root), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for family in PUBLISHED:
        installed = root / "opt/microsoft" / f"{family}-topo.xml"
        assert installed.read_bytes() == (TOPOLOGY / f"{family}-topo.xml").read_bytes()


def test_the_fabric_step_installs_them_on_azure() -> None:
    fabric = (REPO / "images/install/fabric.sh").read_text()
    azure = fabric[fabric.index("    azure)"):fabric.index("    alicloud)")]
    assert 'azure-topology.sh"' in azure
