# shellcheck shell=bash
# gpu-health on AWS: CloudWatch (utilisation, memory, power and temperature come
# from the CloudWatch agent, so those are not sent); Auto Scaling instance health.
publish() {
  local data="" p
  for p; do
    case $p in gpu_utilization=* | gpu_memory_used_mib=* | gpu_power_draw_watts=* | gpu_temperature_max=*) continue ;; esac
    data+="${data:+,}{\"MetricName\":\"${p%=*}\",\"Value\":${p#*=},\"Unit\":\"Count\",\"Dimensions\":"
    data+="[{\"Name\":\"NodeGroup\",\"Value\":\"$GPUFLEET_METRICS_GROUP\"}]}"
  done
  aws cloudwatch put-metric-data --region "$GPUFLEET_REGION" --namespace "$GPUFLEET_METRICS_NAMESPACE" \
    --metric-data "[$data]"
}

mark_unhealthy() {  # Auto Scaling groups only: an EC2 Fleet's instances have no group health
  local t i
  [[ -n $GPUFLEET_SCALING_GROUP ]] || return 0
  t=$(imds_token) && i=$(imds_get "$t" instance-id) || return 1
  log "GPU error ($1): $i unhealthy in $GPUFLEET_SCALING_GROUP"
  aws autoscaling set-instance-health --region "$GPUFLEET_REGION" --instance-id "$i" \
    --health-status Unhealthy --no-should-respect-grace-period
}
