# shellcheck shell=bash
# gpu-health on Alibaba Cloud: CloudMonitor custom metrics in the application
# group GPUFLEET_METRICS_NAMESPACE; ESS instance health. Calls are signed with
# the node's RAM role credentials (alicloud-role.sh's as_node, put before this).

publish() {
  local args=() i=0 p
  for p in "$@"; do
    ((i++))
    args+=("--MetricList.$i.GroupId" "$GPUFLEET_METRICS_NAMESPACE" "--MetricList.$i.MetricName" "${p%=*}"
      "--MetricList.$i.Dimensions" "{\"NodeGroup\":\"$GPUFLEET_METRICS_GROUP\"}" "--MetricList.$i.Type" 0
      "--MetricList.$i.Values" "{\"value\":${p#*=}}")
  done
  as_node cms PutCustomMetric "${args[@]}"
}

mark_unhealthy() {  # ESS groups only: an Auto Provisioning Group's instances have no group health
  local i
  [[ -n $GPUFLEET_SCALING_GROUP ]] || return 0
  i=$(alicloud_meta instance-id) || return 1
  log "GPU error ($1): $i unhealthy in $GPUFLEET_SCALING_GROUP"
  as_node ess SetInstanceHealth --InstanceId "$i" --HealthStatus Unhealthy
}
