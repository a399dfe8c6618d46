# shellcheck shell=bash
# gpu-health on AWS: CloudWatch (utilisation comes from the CloudWatch agent, so
# the last metric, gpu_utilization, is not sent); Auto Scaling instance health.
publish() {
  local data="" p
  for p in "${@:1:$#-1}"; do
    data+="${data:+,}{\"MetricName\":\"${p%=*}\",\"Value\":${p#*=},\"Unit\":\"Count\",\"Dimensions\":"
    data+="[{\"Name\":\"NodeGroup\",\"Value\":\"$GPUFLEET_METRICS_GROUP\"}]}"
  done
  aws cloudwatch put-metric-data --region "$GPUFLEET_REGION" --namespace "$GPUFLEET_METRICS_NAMESPACE" \
    --metric-data "[$data]"
}

mark_unhealthy() {
  local t i
  t=$(imds_token) && i=$(imds_get "$t" instance-id) || return 1
  aws autoscaling set-instance-health --region "$GPUFLEET_REGION" --instance-id "$i" \
    --health-status Unhealthy --no-should-respect-grace-period
}
