# shellcheck shell=bash
# The scale-out gate: run on a new node by the cloud's run-command service (on Alibaba Cloud, Cloud Assistant
# from the OOS template the scale-out lifecycle hook notifies), never by the node itself. It waits for the
# boot node check (gpufleet-health) to finish, then checks the node again. Exit 0 admits the node; any other
# status has the scaling service release it. components/bootstrap/gate.py prepends GPUFLEET_GATE_SECONDS,
# kept below the hook's timeout so a verdict always arrives before the hook's default result applies.
# Self-contained: it may arrive before cloud-init has written the node's settings. No brace expansions
# (dollar-brace, double braces): the runbook that carries this text fills placeholders written that way.
set -uo pipefail
run=/run/gpufleet
etc=/etc/gpufleet
[[ -v GPUFLEET_RUN ]] && run=$GPUFLEET_RUN  # overridable so the gate can be exercised off the node
[[ -v GPUFLEET_ETC ]] && etc=$GPUFLEET_ETC
# The run-command service's PATH may lack the directories the image installs the node check into.
export PATH="$PATH:/usr/local/sbin:/usr/local/bin"

deadline=$((SECONDS + GPUFLEET_GATE_SECONDS))
until [[ -e $run/healthy || -e $run/unhealthy ]]; do
  if ((SECONDS >= deadline)); then
    echo "gpufleet gate: the boot node check did not finish within $GPUFLEET_GATE_SECONDS s" >&2
    exit 3
  fi
  sleep 5
done

if [[ -e $run/unhealthy ]]; then
  echo "gpufleet gate: the boot node check failed" >&2
  cat "$run/nodecheck.json" >&2 || true
  exit 1
fi
# Checked again at admission: a node that drifted since boot (a GPU off the bus, the fabric manager
# stopped) is refused too. Exit 1 drift, 2 unreadable expectation: both release the node.
exec gpufleet-nodecheck --expect "$etc/expect.json" --format text
