#!/bin/bash
# Each minute: publish DCGM error fields to the cloud's monitoring; on an error
# the GPU cannot recover from, mark the instance unhealthy in its group.
# --once: 1 round
set -uo pipefail
# shellcheck source=/dev/null
. "${GPUFLEET_LIB:-/usr/local/lib/gpufleet}/common.sh"
# @cloud: the render puts gpu-health-<cloud>.sh here (publish, mark_unhealthy)
# dcgm_fields.h: 230 last XID, 311 DBE volatile, 393 uncorrectable remapped
# rows, 395 row remap failure, 409 NVLink CRC, 203 GPU utilisation. Fatal XIDs:
# NVIDIA XID catalogue.
FATAL=" 48 64 74 79 95 119 120 "
mkdir -p "$GPUFLEET_RUN"

round() {
  local x=0 f=0 e=0 r=0 m=0 c=0 n=0 u=0 g=0 a b d k h j
  while read -r a b d k h j; do
    ((a)) && ((x++)); [[ $FATAL == *" $a "* ]] && ((f++)); ((k)) && ((m++))
    e=$((e + b)) r=$((r + d)) c=$((c + h)) u=$((u + j)) g=$((g + 1))
  done < <(dcgmi dmon -e 230,311,393,395,409,203 -c 1 |
    awk '$1=="GPU"{for(i=3;i<9;i++)if($i!~/^[0-9]+$/)$i=0;print $3,$4,$5,$6,$7,$8}')
  [[ -e $GPUFLEET_RUN/unhealthy ]] && n=1
  publish gpu_xid_errors=$x gpu_fatal_xid_errors=$f gpu_ecc_uncorrectable=$e gpu_row_remap_failures=$m \
    gpu_uncorrectable_remapped_rows=$r gpu_nvlink_crc_errors=$c nodecheck_failed=$n \
    gpu_utilization=$((g ? u / g : 0)) || log "metrics not published"
  ((f + e + m + n)) && take_out "fatal xid $f, ecc $e, remap failures $m, node check failed $n"
}

take_out() {  # once per boot, scaling groups only
  [[ -n $GPUFLEET_SCALING_GROUP && ! -e $GPUFLEET_RUN/taken-out ]] || return 0
  log "GPU error ($1): unhealthy in $GPUFLEET_SCALING_GROUP"
  mark_unhealthy && touch "$GPUFLEET_RUN/taken-out"
}

round
[[ ${1:-} == --once ]] && exit 0
while sleep 60; do round; done
