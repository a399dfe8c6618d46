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

result=CONTINUE
if ! gpufleet-nodecheck --expect "$GPUFLEET_ETC/expect.json" --format json >"$GPUFLEET_RUN/nodecheck.json"; then
  result=ABANDON
fi

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
