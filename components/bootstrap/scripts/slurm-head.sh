#!/bin/bash
# The head node's first step at every boot, before munge and slurmctld (gpufleet-slurm-head.service): slurm.conf
# names this machine as the controller, the daemons' directories exist, and munge gets the cluster's key. The key is
# made here at the first boot and kept in the cloud's secret store (never in Pulumi state); a head node that comes
# back, or replaces the first, takes the stored key, so the nodes' keys still match.
set -euo pipefail
# shellcheck source=/dev/null
. "${GPUFLEET_LIB:-/usr/local/lib/gpufleet}/common.sh"
# shellcheck source=/dev/null
. "${GPUFLEET_LIB:-/usr/local/lib/gpufleet}/slurm-cloud.sh"  # the cloud's part: slurm-<cloud>.sh
MUNGE_KEY=${GPUFLEET_MUNGE_KEY:-/etc/munge/munge.key}
MUNGE_USER=${GPUFLEET_MUNGE_USER:-munge}

instance_facts || { log "instance metadata unreadable: slurm.conf cannot name this machine"; exit 1; }
# The controller's name and address are this machine's, known only once it runs: the render leaves tokens.
sed -i -e "s/@HEAD_HOST@/$(hostname -s)/g" -e "s/@HEAD_ADDRESS@/$ADDRESS/g" "$GPUFLEET_SLURM_ETC/slurm.conf"
# shellcheck disable=SC2086 # a list of directories
install -d -o "$GPUFLEET_SLURM_USER" -g "$GPUFLEET_SLURM_USER" -m 0755 $GPUFLEET_SLURM_DIRS

key=$(mktemp)
trap 'rm -f "$key"' EXIT
if munge_key_stored; then
  munge_key_read "$key"
  log "munge key read from the secret store"
else
  # munged's key: 1024 random bytes, as mungekey(8) makes by default.
  head -c 1024 /dev/urandom >"$key"
  munge_key_store "$key"
  log "munge key made and stored"
fi
install -m 0400 -o "$MUNGE_USER" -g "$MUNGE_USER" "$key" "$MUNGE_KEY"
