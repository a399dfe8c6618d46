# shellcheck shell=bash
# The scale-in checkpoint: run on a node that is being removed by the cloud's run-command service (on Alibaba
# Cloud, Cloud Assistant from the OOS template the scale-in lifecycle hook notifies), never by the node itself.
# It runs the stack's checkpoint hook as the spot watcher does on an interruption notice (common.sh checkpoint:
# once per node, whichever asks first, the other waiting for it), for at most the stack's checkpoint grace, and
# exits with the hook's status. The runbook completes the removal either way: a failed checkpoint never keeps a
# node the scaling service is taking out. No brace expansions (dollar-brace, double braces): the runbook that
# carries this text fills placeholders written that way.
set -uo pipefail
lib=/usr/local/lib/gpufleet
[[ -v GPUFLEET_LIB ]] && lib=$GPUFLEET_LIB  # overridable so the command can be exercised off the node
# The run-command service's PATH may lack the directories the stack's checkpoint command lives in.
export PATH="$PATH:/usr/local/sbin:/usr/local/bin"
if [[ ! -r $lib/common.sh ]]; then
  # A node removed before cloud-init wrote its scripts has run no workload: there is nothing to save.
  echo "gpufleet checkpoint: $lib/common.sh missing, the node never finished its bootstrap: nothing to save" >&2
  exit 0
fi
# shellcheck source=/dev/null
. "$lib/common.sh"
checkpoint interruption
