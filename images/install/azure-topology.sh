#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Azure: the NCCL topology files of the InfiniBand VM families (azure-topology/, Azure/azhpc-images @8e9d055f) where
# azhpc-images puts them, /opt/microsoft/<family>-topo.xml: the VM's PCI layout is virtual, so NCCL cannot read the
# GPU-HCA affinity from it, and the node's gpufleet-nccl-conf names the file in /etc/nccl.conf (NCCL_TOPO_FILE).
set -euo pipefail

here=$(dirname "${BASH_SOURCE[0]}")
install -d -m 0755 "${GPUFLEET_ROOT:-}/opt/microsoft"
install -m 0644 "$here"/azure-topology/*-topo.xml "${GPUFLEET_ROOT:-}/opt/microsoft/"
