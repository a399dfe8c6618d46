# shellcheck shell=bash
# gpufleet-gpu-health on Azure: every field is a custom metric of the node's
# scale set (Azure Monitor REST API, dimension Instance), posted with the node
# identity's token (Monitoring Metrics Publisher there). No agent ships GPU
# metrics here, so every metric round passes is posted.
MD=http://169.254.169.254/metadata
md() { curl -sf -H Metadata:true "$MD/$1"; }

publish() {
  local q="api-version=2021-02-01&format=text" tok id now p
  tok=$(md "identity/oauth2/token?api-version=2018-02-01&resource=https://monitoring.azure.com/" |
    sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')
  [[ -n $tok ]] || { log "metrics not published: no token"; return 0; }
  id=/subscriptions/$(md "instance/compute/subscriptionId?$q")/resourceGroups/$(md \
    "instance/compute/resourceGroupName?$q")/providers/Microsoft.Compute/virtualMachineScaleSets
  now=$(date -u +%FT%TZ)
  for p; do
    curl -sf -X POST -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' -d "{\"time\":\"$now\",\
\"data\":{\"baseData\":{\"metric\":\"${p%=*}\",\"namespace\":\"$GPUFLEET_METRICS_NAMESPACE\",\"dimNames\":\
[\"Instance\"],\"series\":[{\"dimValues\":[\"$HOSTNAME\"],\"min\":${p#*=},\"max\":${p#*=},\"sum\":${p#*=},\
\"count\":1}]}}}" "https://$GPUFLEET_REGION.monitoring.azure.com$id/$GPUFLEET_METRICS_GROUP/metrics" ||
      log "${p%=*} not published"
  done
}

mark_unhealthy() {  # the health endpoint answers 503: Application Health, then automatic repairs replace the VM
  log "GPU error ($1): reporting unhealthy to the scale set"
  rm -f "$GPUFLEET_RUN/healthy"
}
