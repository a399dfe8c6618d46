#!/bin/bash
# Join Slurm once the node check passed: gpufleet-slurm-join.service Requires= and runs After=
# gpufleet-health.service, so only a node whose check passed gets here (slurmd's drop-in carries the same two lines:
# after a reboot slurmd waits for the check again and stays down when it fails). The node takes the cluster's munge
# key from the cloud's secret store (the head node stores it at its first boot: wait for it), starts munge, and
# registers as a dynamic node fetching its configuration from slurmctld (configless).
set -euo pipefail
# shellcheck source=/dev/null
. "${GPUFLEET_LIB:-/usr/local/lib/gpufleet}/common.sh"
# shellcheck source=/dev/null
. "${GPUFLEET_LIB:-/usr/local/lib/gpufleet}/slurm-cloud.sh"  # the cloud's part: slurm-<cloud>.sh
# shellcheck source=/dev/null
. "$GPUFLEET_ETC/slurm.env"  # the head's address, the secret, how long to wait for the key
MUNGE_KEY=${GPUFLEET_MUNGE_KEY:-/etc/munge/munge.key}
MUNGE_USER=${GPUFLEET_MUNGE_USER:-munge}
UNITS=${GPUFLEET_UNITS:-/etc/systemd/system}

instance_facts || { log "instance metadata unreadable: the node cannot name itself to Slurm"; exit 1; }
# One line per instance type and zone of the group: `<type> <zone> <slurmd command>`, the instance id a token.
registration=$(awk -v type="$INSTANCE_TYPE" -v zone="$ZONE" \
  '$1 == type && $2 == zone { sub(/^[^ ]+ [^ ]+ /, ""); print; exit }' "$GPUFLEET_ETC/slurmd-registration")
if [[ -z $registration ]]; then
  log "no Slurm registration for $INSTANCE_TYPE in $ZONE"
  exit 1
fi

# The node's own gres.conf (the served one includes it); with MIG from the devices the boot made, and no join where
# they differ from what the node registers.
gpufleet-slurm-gres "$GPUFLEET_ETC/slurm-gres.json" "$INSTANCE_TYPE" || { log "no gres.conf for this node: it does not join"; exit 1; }

key=$(mktemp)
trap 'rm -f "$key"' EXIT
waited=0
until munge_key_stored && munge_key_read "$key"; do
  if ((waited >= GPUFLEET_SLURM_KEY_WAIT_SECONDS)); then
    log "no munge key in the secret store after ${waited} s: the head node has not stored it"
    exit 1
  fi
  sleep 10
  waited=$((waited + 10))
done
install -m 0400 -o "$MUNGE_USER" -g "$MUNGE_USER" "$key" "$MUNGE_KEY"
systemctl restart munge.service

mkdir -p "$UNITS/slurmd.service.d"
printf '[Service]\nExecStart=\nExecStart=%s\n' "${registration//@INSTANCE_ID@/$INSTANCE_ID}" \
  >"$UNITS/slurmd.service.d/gpufleet-registration.conf"
systemctl daemon-reload
# --no-block: slurmd is ordered after this unit, whose start would otherwise wait for itself.
systemctl --no-block restart slurmd.service
log "slurmd registering with $GPUFLEET_SLURM_SERVER"
