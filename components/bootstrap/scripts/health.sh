#!/bin/bash
# Run the node check and report the result. AWS groups with a launch
# lifecycle hook continue or abandon the launch; on Alibaba Cloud the
# scale-out gate (scale-out-gate.sh, run through Cloud Assistant) reads the
# marks below. Everywhere a failed check leaves $GPUFLEET_RUN/unhealthy and a
# failed unit, so workload units that require gpufleet-health.service never start.
set -euo pipefail
# shellcheck source=/dev/null
. "${GPUFLEET_LIB:-/usr/local/lib/gpufleet}/common.sh"
mkdir -p "$GPUFLEET_RUN"
rm -f "$GPUFLEET_RUN/unhealthy" "$GPUFLEET_RUN/healthy"
set_fabric_mtu
guard_metadata
start_fabric_manager_for_nvswitches

# Right after boot a check can fail and pass moments later (the fabric manager still training the NVSwitch
# fabric, EFA devices still probing): drift (exit 1) is checked again every GPUFLEET_NODECHECK_RETRY_INTERVAL s
# for at most GPUFLEET_NODECHECK_RETRY_SECONDS (the render keeps it inside the cloud's hold). An unreadable
# expectation (exit 2) cannot heal and is not retried.
retry_until=$((SECONDS + ${GPUFLEET_NODECHECK_RETRY_SECONDS:-0}))
interval=${GPUFLEET_NODECHECK_RETRY_INTERVAL:-30}
result=ABANDON
while :; do
  status=0
  gpufleet-nodecheck --expect "$GPUFLEET_ETC/expect.json" --format json >"$GPUFLEET_RUN/nodecheck.json" || status=$?
  if ((status == 0)); then
    result=CONTINUE
    break
  fi
  ((status == 1 && SECONDS + interval <= retry_until)) || break
  log "node check failed (exit $status); checking again in ${interval} s"
  sleep "$interval"
done

if [[ $GPUFLEET_CLOUD == aws && -n $GPUFLEET_LAUNCH_HOOK ]]; then
  # After a reboot no launch action is pending and the call fails harmlessly.
  complete_lifecycle "$GPUFLEET_LAUNCH_HOOK" "$result" || log "launch lifecycle action not completed"
fi

if [[ $result == ABANDON ]]; then
  touch "$GPUFLEET_RUN/unhealthy"
  log "node check failed: see $GPUFLEET_RUN/nodecheck.json"
  exit 1
fi
touch "$GPUFLEET_RUN/healthy"  # what a cloud health probe reads (health-endpoint.py)
log "node check passed"
