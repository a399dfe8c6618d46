#!/bin/bash
# Each minute: publish DCGM error fields to CloudWatch; on an error the GPU
# cannot recover from, mark the instance unhealthy in its group. --once: 1 round
set -uo pipefail
# shellcheck source=/dev/null
. "${GPUFLEET_LIB:-/usr/local/lib/gpufleet}/common.sh"
# dcgm_fields.h: 230 last XID, 311 DBE volatile, 393 uncorrectable remapped
# rows, 395 row remap failure, 409 NVLink CRC. Fatal XIDs: NVIDIA XID catalogue.
FATAL=" 48 64 74 79 95 119 120 "
mkdir -p "$GPUFLEET_RUN"

round() {
  local x=0 f=0 e=0 r=0 m=0 c=0 n=0 a b d g h data="" p
  while read -r a b d g h; do
    ((a)) && ((x++)); [[ $FATAL == *" $a "* ]] && ((f++)); ((g)) && ((m++))
    e=$((e + b)) r=$((r + d)) c=$((c + h))
  done < <(dcgmi dmon -e 230,311,393,395,409 -c 1 |
    awk '$1=="GPU"{for(i=3;i<8;i++)if($i!~/^[0-9]+$/)$i=0;print $3,$4,$5,$6,$7}')
  [[ -e $GPUFLEET_RUN/unhealthy ]] && n=1
  for p in gpu_xid_errors=$x gpu_fatal_xid_errors=$f gpu_ecc_uncorrectable=$e gpu_row_remap_failures=$m \
    gpu_uncorrectable_remapped_rows=$r gpu_nvlink_crc_errors=$c nodecheck_failed=$n; do
    data+="${data:+,}{\"MetricName\":\"${p%=*}\",\"Value\":${p#*=},\"Unit\":\"Count\",\"Dimensions\":"
    data+="[{\"Name\":\"NodeGroup\",\"Value\":\"$GPUFLEET_METRICS_GROUP\"}]}"
  done
  aws cloudwatch put-metric-data --region "$GPUFLEET_REGION" --namespace "$GPUFLEET_METRICS_NAMESPACE" \
    --metric-data "[$data]" || log "metrics not published"
  ((f + e + m + n)) && take_out "fatal xid $f, ecc $e, remap failures $m, node check failed $n"
}

take_out() {  # once per boot, Auto Scaling groups only
  local t i
  [[ -n $GPUFLEET_SCALING_GROUP && ! -e $GPUFLEET_RUN/taken-out ]] || return 0
  t=$(imds_token) && i=$(imds_get "$t" instance-id) || return 0
  log "GPU error ($1): $i unhealthy in $GPUFLEET_SCALING_GROUP"
  aws autoscaling set-instance-health --region "$GPUFLEET_REGION" --instance-id "$i" \
    --health-status Unhealthy --no-should-respect-grace-period && touch "$GPUFLEET_RUN/taken-out"
}

round
[[ ${1:-} == --once ]] && exit 0
while sleep 60; do round; done
