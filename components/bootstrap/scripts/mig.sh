#!/bin/bash
# MIG mode on, then the group's MIG devices on each GPU (components/bootstrap/mig.py says why)
# shellcheck source=/dev/null
. "${GPUFLEET_LIB:-/usr/local/lib/gpufleet}/common.sh"
mark=${GPUFLEET_STATE:-/var/lib/gpufleet}/mig-rebooted
query() { nvidia-smi --query-gpu="$1" --format=csv,noheader; }
off() { query "mig.mode.$1" | grep -qv Enabled; }
if off current; then
  nvidia-smi -mig 1
fi
if off current; then
  if [[ -e $mark ]] || off pending; then
    log "MIG mode stays off"
    exit 1
  fi
  log "MIG mode waits for a GPU reset: rebooting once"
  mkdir -p "${mark%/*}" && touch "$mark" && systemctl reboot && sleep infinity
  exit 1
fi
rm -f "$mark"
nvidia-smi mig -dci
nvidia-smi mig -dgi
for gpu in $(query index); do
  nvidia-smi mig -i "$gpu" -cgi "$GPUFLEET_MIG_DEVICES" -C || exit 1
done
