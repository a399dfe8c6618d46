# shellcheck shell=bash
# AWS: utilisation, memory, power, temperature come from the CloudWatch agent
publish() {
  local d="" p
  for p; do
    d+="${d:+,}{\"MetricName\":\"${p%=*}\",\"Value\":${p#*=},\"Unit\":\"Count\",\"Dimensions\":"
    d+="[{\"Name\":\"NodeGroup\",\"Value\":\"$GPUFLEET_METRICS_GROUP\"}]}"
  done
  aws cloudwatch put-metric-data --region "$GPUFLEET_REGION" --namespace "$GPUFLEET_METRICS_NAMESPACE" \
    --metric-data "[$d]" || log "metrics not published"
}

take_out() {  # Auto Scaling groups only
  local t i
  [[ -n $GPUFLEET_SCALING_GROUP ]] && t=$(imds_token) && i=$(imds_get "$t" instance-id) || return 0
  log "GPU error ($1): $i unhealthy in $GPUFLEET_SCALING_GROUP"
  aws autoscaling set-instance-health --region "$GPUFLEET_REGION" --instance-id "$i" \
    --health-status Unhealthy --no-should-respect-grace-period && touch "$GPUFLEET_RUN/taken-out"
}
