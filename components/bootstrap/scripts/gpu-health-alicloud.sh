# shellcheck shell=bash
# gpu-health on Alibaba Cloud: CloudMonitor custom metrics in the application
# group GPUFLEET_METRICS_NAMESPACE; ESS instance health. Calls are signed with
# the node's RAM role credentials, read here with a metadata token: the pinned
# aliyun CLI 3.0.174 fetches them itself without one in --mode EcsRamRole
# (alibaba-cloud-sdk-go v1.62.472 sdk/auth/signers/signer_ecs_ram_role.go:99-107,
# a plain GET), which hardened metadata refuses. --mode StsToken takes them from
# ALIBABACLOUD_ACCESS_KEY_ID / _ACCESS_KEY_SECRET / _SECURITY_TOKEN (aliyun-cli
# v3.0.174 config/profile.go:177-207, 319-323), kept out of argv, which every
# user can read; ALIBABACLOUD_IGNORE_PROFILE=TRUE skips any config file
# (config/configuration.go:119).

as_node() {
  local role creds id secret sts
  role=$(alicloud_meta ram/security-credentials/) &&
    creds=$(alicloud_meta "ram/security-credentials/$role") || return 1
  { read -r id && read -r secret && read -r sts; } < <(python3 -c '
import json, sys
c = json.load(sys.stdin)
if c.get("Code") == "Success":
    print(c["AccessKeyId"], c["AccessKeySecret"], c["SecurityToken"], sep="\n")
' <<<"$creds") || { log "no role credentials for $role"; return 1; }
  ALIBABACLOUD_IGNORE_PROFILE=TRUE ALIBABACLOUD_ACCESS_KEY_ID=$id ALIBABACLOUD_ACCESS_KEY_SECRET=$secret \
    ALIBABACLOUD_SECURITY_TOKEN=$sts aliyun --mode StsToken --region "$GPUFLEET_REGION" "$@"
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
  i=$(alicloud_meta instance-id) || return 1
  log "GPU error ($1): $i unhealthy in $GPUFLEET_SCALING_GROUP"
  as_node ess SetInstanceHealth --InstanceId "$i" --HealthStatus Unhealthy
}
