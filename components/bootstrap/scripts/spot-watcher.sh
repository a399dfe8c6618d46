#!/bin/bash
# Poll the cloud's interruption notices every 5 s and run the checkpoint hook
# once per kind of notice (rebalance, interruption); on an interruption a Slurm
# node also leaves Slurm (gpufleet-slurm-leave). --once: poll one time.
set -uo pipefail
# shellcheck source=/dev/null
. "${GPUFLEET_LIB:-/usr/local/lib/gpufleet}/common.sh"
INTERVAL=5
AZURE_EVENTS="$IMDS/metadata/scheduledevents?api-version=2020-07-01"
AZURE_NAME="$IMDS/metadata/instance/compute/name?api-version=2021-02-01&format=text"

interrupted() {  # the checkpoint, with a Slurm node drained before it and its jobs requeued after it
  if [[ -n ${GPUFLEET_SLURM_LEAVE:-} ]] && once slurm-drain; then
    "$GPUFLEET_SLURM_LEAVE" drain || log "draining the Slurm node failed"
  fi
  checkpoint interruption
  if [[ -n ${GPUFLEET_SLURM_LEAVE:-} ]] && once slurm-requeue; then
    "$GPUFLEET_SLURM_LEAVE" requeue || log "requeueing the Slurm node's jobs failed"
  fi
}

poll_aws() {
  local token
  token=$(imds_token) || return 0
  if imds_get "$token" events/recommendations/rebalance >/dev/null; then checkpoint rebalance; fi
  if imds_get "$token" spot/instance-action >/dev/null; then interrupted; fi
  if [[ $(imds_get "$token" autoscaling/target-lifecycle-state) == Terminated ]]; then
    interrupted
    if [[ -n $GPUFLEET_TERMINATE_HOOK ]] && once terminate-completed; then
      complete_lifecycle "$GPUFLEET_TERMINATE_HOOK" CONTINUE || log "terminate lifecycle action not completed"
    fi
  fi
}

poll_azure() {
  local events name id
  events=$(curl -sf -H Metadata:true "$AZURE_EVENTS") || return 0
  name=$(curl -sf -H Metadata:true "$AZURE_NAME") || return 0
  for id in $(python3 -c '
import json, sys
for event in json.loads(sys.argv[1]).get("Events", []):
    # Preempt: a Spot eviction (30 s notice). Terminate: a scale-in or delete of a Regular VM, held for
    # the terminate notification of the scale set (notBeforeTimeout).
    if event.get("EventType") in ("Preempt", "Terminate") and sys.argv[2] in event.get("Resources", []):
        print(event["EventId"])
' "$events" "$name"); do
    interrupted
    # Acknowledging after the checkpoint lets the event proceed without waiting out its notice.
    if once "ack-$id"; then
      curl -sf -H Metadata:true -X POST -d "{\"StartRequests\":[{\"EventId\":\"$id\"}]}" "$AZURE_EVENTS" \
        >/dev/null || log "acknowledging event $id failed"
    fi
  done
}

poll_alicloud() {
  local when
  # 404 until ECS schedules the release of this spot instance.
  when=$(alicloud_meta instance/spot/termination-time) || return 0
  if [[ -n $when ]]; then interrupted; fi
}

while true; do
  "poll_$GPUFLEET_CLOUD"
  [[ ${1:-} == --once ]] && break
  sleep "$INTERVAL"
done
