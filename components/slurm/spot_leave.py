"""What a Slurm node does on its cloud's interruption notice: the spot watcher (components/bootstrap/scripts/
spot-watcher.sh) runs `gpufleet-slurm-leave drain` before the checkpoint hook and `gpufleet-slurm-leave requeue`
after it.

- drain: no new job starts on a node about to go (scontrol.1 State=DRAIN: "no new jobs may be started on this
  node. Existing jobs are allowed to run to completion"), while the checkpoint hook lets the running ones save;
- requeue: the node's batch jobs go back to the queue at once (scontrol.1 `requeue Incomplete <job_list>`: a
  running job into pending state), so they start elsewhere, or on a fresh node the queue watcher asks for, instead
  of failing with the node; then the node's name is deleted once its jobs are off it (`scontrol delete` refuses a
  node with jobs), so no dead name lingers. Not DOWN: it kills the jobs and leaves their requeue to JobRequeue and
  the job's --requeue; not `scontrol reboot`: the instance does not come back.

The node finds its own name by its host name: a dynamic node registers with the host's name as NodeHostName
(sinfo %n).
"""

from __future__ import annotations

SPOT_REASON = "gpufleet: spot interruption"
# How long `requeue` waits for the node's jobs to finish leaving it before giving up on deleting the name (within
# the shortest notice, Azure's 30 s Preempt; the queue watcher's sweep does not see a drained node).
DELETE_WAIT_SECONDS = 25


def render_spot_leave(etc_dir: str) -> str:
    """gpufleet-slurm-leave (a shell script): `drain` or `requeue`, with the slurm.conf in `etc_dir` (on a
    configless node slurmd's cache, site.CONFIGLESS_CONF_DIR)."""
    return "\n".join([
        "#!/bin/bash",
        "# drain: no new job on this node; requeue: its batch jobs back to the queue, then its name deleted.",
        "set -uo pipefail",
        f"export SLURM_CONF={etc_dir}/slurm.conf",
        'host=$(hostname)',
        'node=$(sinfo -h -N -o "%N %n" | awk -v host="$host" \'$2 == host {print $1; exit}\')',
        'if [[ -z $node ]]; then echo "gpufleet: no Slurm node on host $host" >&2; exit 0; fi',
        'case ${1:-} in',
        f'  drain) exec scontrol update NodeName="$node" State=DRAIN Reason="{SPOT_REASON}" ;;',
        '  requeue) ;;',
        '  *) echo "usage: gpufleet-slurm-leave drain|requeue" >&2; exit 2 ;;',
        'esac',
        'jobs=$(squeue -h -w "$node" -o %A | paste -sd, -)',
        'if [[ -n $jobs ]]; then scontrol requeue Incomplete "$jobs"; fi',
        f'for _ in $(seq {DELETE_WAIT_SECONDS}); do',
        '  scontrol delete NodeName="$node" 2>/dev/null && exit 0',
        '  sleep 1',
        'done',
        'echo "gpufleet: node $node not deleted: its jobs are still leaving it" >&2',
        'exit 1',
        "",
    ])
