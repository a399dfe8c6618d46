#!/usr/bin/env bash
# gpufleet-nccl-conf: /etc/nccl.conf on an Azure InfiniBand node, as Azure/azhpc-images writes it for the VM family
# (Azure/azhpc-images components/customizations/ndv4.sh and ndv5.sh @8e9d055f, lines 10-15): relaxed PCI ordering on
# the IB HCAs, the family's topology file (the VM's PCI layout is virtual: NCCL cannot read GPU-HCA affinity from it),
# CPU affinity ignored. Also NCCL_IB_HCA naming the InfiniBand HCAs only: these VMs show their accelerated-networking
# NIC as an mlx5 RDMA device too, link layer Ethernet (azhpc-images renames the two kinds mlx5_ib* and mlx5_an*:
# Azure/azhpc-images components/install_azure_persistent_rdma_naming.sh; this image keeps the kernel's mlx5_N names,
# so the ports' link layer tells them apart), and NCCL would otherwise pick it. `=` makes the list exact names (NCCL
# env.html, NCCL_IB_HCA). Written at every boot: mlx5_N numbering follows PCI enumeration.
set -euo pipefail
# shellcheck source=common.sh
. "${GPUFLEET_LIB:-/usr/local/lib/gpufleet}/common.sh"
infiniband=${GPUFLEET_SYS_INFINIBAND:-/sys/class/infiniband}
conf=${GPUFLEET_NCCL_CONF:-/etc/nccl.conf}
# Where azhpc-images places the family's topology file (setup_sku_customizations.sh copies topology/ to
# /opt/microsoft; ndv4.sh/ndv5.sh link <family>/topo.xml to it).
topology=${GPUFLEET_TOPOLOGY_DIR:-/opt/microsoft}/$GPUFLEET_NCCL_FAMILY-topo.xml

hcas=()
for device in "$infiniband"/*; do
  for layer in "$device"/ports/*/link_layer; do
    if [[ -r $layer && $(<"$layer") == InfiniBand ]]; then
      hcas+=("${device##*/}")
      break
    fi
  done
done
if ((${#hcas[@]} == 0)); then
  log "nccl: no InfiniBand HCA under $infiniband; $conf not written (the node check fails the node)"
  exit 1
fi

{
  echo "NCCL_IB_PCI_RELAXED_ORDERING=1"
  echo "NCCL_IGNORE_CPU_AFFINITY=1"
  echo "NCCL_IB_HCA==$(IFS=,; echo "${hcas[*]}")"
  if [[ -r $topology ]]; then
    echo "NCCL_TOPO_FILE=$topology"
  else
    log "nccl: no topology file $topology in this image; NCCL reads the VM's virtual PCI layout"
  fi
} >"$conf.tmp"
mv "$conf.tmp" "$conf"
