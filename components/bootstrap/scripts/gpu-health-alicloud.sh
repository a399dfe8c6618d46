# shellcheck shell=bash
# gpu-health on Alibaba Cloud: CloudMonitor custom metrics in the application
# group GPUFLEET_METRICS_NAMESPACE; ESS instance health. The aliyun CLI signs
# with the node's RAM role; a metadata token works in both metadata modes.
META=http://100.100.100.200/latest

meta() {  # path under meta-data/
  local t
  t=$(curl -sf -X PUT -H 'X-aliyun-ecs-metadata-token-ttl-seconds: 300' "$META/api/token") &&
    curl -sf -H "X-aliyun-ecs-metadata-token: $t" "$META/meta-data/$1"
}

as_node() {
  local role
  role=$(meta ram/security-credentials/) || return 1
  aliyun --mode EcsRamRole --ram-role-name "$role" --region "$GPUFLEET_REGION" "$@"
}

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
  i=$(meta instance-id) || return 1
  log "GPU error ($1): $i unhealthy in $GPUFLEET_SCALING_GROUP"
  as_node ess SetInstanceHealth --InstanceId "$i" --HealthStatus Unhealthy
}
