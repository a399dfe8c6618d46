#!/bin/bash
# Each minute: publish DCGM fields to the cloud's monitoring; on an error the
# GPU cannot recover from, take the node out of its group.
# --once: 1 round
set -uo pipefail
# shellcheck source=/dev/null
. "${GPUFLEET_LIB:-/usr/local/lib/gpufleet}/common.sh"
# @cloud: the render puts gpu-health-<cloud>.sh here (publish, mark_unhealthy)
# dcgm_fields.h: 311 DBE volatile, 393 uncorrectable remapped rows, 395 row
# remap failure, 409 NVLink CRC, 203 utilisation, 252 MiB used, 155 W, 150 C.
# Fatal XIDs: NVIDIA XID catalogue.
FATAL=" 48 64 74 79 95 119 120 "
mkdir -p "$GPUFLEET_RUN"

# "<new XIDs> <new fatal XIDs>" in the kernel lines on stdin (the driver logs
# each as "NVRM: Xid (PCI:0000:cb:00): 13, ..."). DCGM's last-XID field stays
# set for a node's life after one harmless XID: an alarm on it fires once.
xid_counts() {
  awk -v fatal="$FATAL" 'match($0, /NVRM: Xid \([^)]*\): [0-9]+/) {
    n++; x = substr($0, RSTART, RLENGTH); sub(/.*: /, "", x)
    if (index(fatal, " " x " ")) f++
  } END { print n + 0, f + 0 }'
}

round() {
  local x f e=0 r=0 m=0 c=0 n=0 u=0 b=0 w=0 t=0 g=0 s d h i j k l o p
  # The kernel lines since the last round: journalctl keeps the place in its
  # cursor file (the run directory is per boot, as -k is).
  read -r x f < <(journalctl -k -o cat --no-pager --cursor-file="$GPUFLEET_RUN/xid-cursor" | xid_counts)
  [[ -e $GPUFLEET_RUN/unhealthy ]] && n=1
  # No DCGM answer: dcgm_up=0, none of its fields (0s read idle, error-free)
  if ! s=$(dcgmi dmon -e 311,393,395,409,203,252,155,150 -c 1 |
    awk '$1=="GPU"{for(i=3;i<11;i++){if($i!~/^[0-9.]+$/)$i=0;$i=int($i)}print $3,$4,$5,$6,$7,$8,$9,$10}') ||
    [[ -z $s ]]; then
    publish gpu_xid_errors=$x gpu_fatal_xid_errors=$f nodecheck_failed=$n dcgm_up=0 || log "metrics not published"
    ((f + n)) && take_out "fatal xid $f, node check failed $n"
    return 0
  fi
  while read -r d h i j k l o p; do
    ((i)) && ((m++))
    e=$((e + d)) r=$((r + h)) c=$((c + j)) u=$((u + k)) b=$((b + l)) w=$((w + o)) g=$((g + 1))
    ((p > t)) && t=$p
  done <<<"$s"
  publish gpu_xid_errors=$x gpu_fatal_xid_errors=$f gpu_ecc_uncorrectable=$e gpu_row_remap_failures=$m \
    gpu_uncorrectable_remapped_rows=$r gpu_nvlink_crc_errors=$c nodecheck_failed=$n dcgm_up=1 \
    gpu_utilization=$((u / g)) gpu_memory_used_mib=$b gpu_power_draw_watts=$w gpu_temperature_max=$t ||
    log "metrics not published"
  ((f + e + m + n)) && take_out "fatal xid $f, ecc $e, remap failures $m, node check failed $n"
}

take_out() {  # once per boot
  [[ -e $GPUFLEET_RUN/taken-out ]] && return 0
  mark_unhealthy "$1" && touch "$GPUFLEET_RUN/taken-out"
}

round
[[ ${1:-} == --once ]] && exit 0
while sleep 60; do round; done
