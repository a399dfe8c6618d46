# shellcheck shell=bash
# Helpers sourced by the gpufleet node scripts; never run on its own.
# Directories are overridable so the scripts can be exercised off the node.
GPUFLEET_ETC=${GPUFLEET_ETC:-/etc/gpufleet}
GPUFLEET_RUN=${GPUFLEET_RUN:-/run/gpufleet}
GPUFLEET_SYS_NET=${GPUFLEET_SYS_NET:-/sys/class/net}
GPUFLEET_SYS_PCI=${GPUFLEET_SYS_PCI:-/sys/bus/pci/devices}
# shellcheck source=/dev/null
. "$GPUFLEET_ETC/bootstrap.env"
IMDS=http://169.254.169.254

log() { echo "gpufleet: $*" >&2; }

once() {  # marker name; true the first time only
  mkdir -p "$GPUFLEET_RUN"
  [[ -e $GPUFLEET_RUN/$1 ]] && return 1
  touch "$GPUFLEET_RUN/$1"
}

# The stack's checkpoint hook, once per node and kind of notice, for at most the stack's checkpoint grace. Two
# callers may ask for it (the spot watcher on a notice, the scale-in runbook on a removal): the lock makes the
# second wait for the first's run to end instead of returning while the checkpoint is still being written.
checkpoint() {  # notice kind; the hook's status
  mkdir -p "$GPUFLEET_RUN"
  (
    flock 9
    once "checkpoint-$1" || exit 0
    if [[ -z $GPUFLEET_CHECKPOINT_HOOK ]]; then
      log "$1 notice; no checkpoint hook configured"
      exit 0
    fi
    log "$1 notice; running checkpoint hook"
    timeout "$GPUFLEET_CHECKPOINT_GRACE_SECONDS" bash -c "$GPUFLEET_CHECKPOINT_HOOK"
    status=$?
    ((status == 0)) || log "checkpoint hook exited $status"
    exit "$status"
  ) 9>"$GPUFLEET_RUN/checkpoint.lock"
}

# IMDSv2: every metadata read needs a session token.
imds_token() {
  curl -sf -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 300' "$IMDS/latest/api/token"
}

imds_get() {  # token, path under /latest/meta-data/
  curl -sf -H "X-aws-ec2-metadata-token: $1" "$IMDS/latest/meta-data/$2"
}

# Alibaba's metadata service in security hardening mode (launch templates set http_tokens required): every read
# carries a session token from PUT /latest/api/token (ECS user guide, view-instance-metadata). The address is
# overridable so the scripts can be exercised against a local server.
ALICLOUD_METADATA=${GPUFLEET_ALICLOUD_METADATA:-http://100.100.100.200}/latest

alicloud_meta() {  # path under /latest/meta-data/
  local token
  token=$(curl -sf -X PUT -H 'X-aliyun-ecs-metadata-token-ttl-seconds: 300' "$ALICLOUD_METADATA/api/token") &&
    curl -sf -H "X-aliyun-ecs-metadata-token: $token" "$ALICLOUD_METADATA/meta-data/$1"
}

complete_lifecycle() {  # hook name, CONTINUE|ABANDON
  local token iid
  if ! token=$(imds_token) || ! iid=$(imds_get "$token" instance-id); then
    log "instance metadata unreachable; lifecycle hook $1 left to its timeout"
    return 1
  fi
  aws autoscaling complete-lifecycle-action --region "$GPUFLEET_REGION" \
    --auto-scaling-group-name "$GPUFLEET_SCALING_GROUP" --lifecycle-hook-name "$1" \
    --instance-id "$iid" --lifecycle-action-result "$2"
}

# eRDMA: the ERIs' MTU by Alibaba's rule (clouds/alicloud/eri.py), which the node check asserts. Not the primary
# ENI (the default route's): it keeps the VPC's MTU; every other ENI is an ERI (alicloud/nodegroup.py). An
# interface whose driver reports a maximum below the MTU, or none, keeps its MTU.
set_fabric_mtu() {
  local dev primary max
  [[ -n ${GPUFLEET_FABRIC_MTU:-} ]] || return 0
  primary=$(ip -o route show default | awk '{for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit }}')
  if [[ -z $primary ]]; then
    log "no default route to tell the primary interface: MTU $GPUFLEET_FABRIC_MTU not set"
    return 0
  fi
  for dev in "$GPUFLEET_SYS_NET"/*; do
    dev=${dev##*/}
    [[ $dev == lo || $dev == "$primary" ]] && continue
    max=$(ip -d link show dev "$dev" | awk '{for (i = 1; i < NF; i++) if ($i == "maxmtu") { print $(i + 1); exit }}')
    [[ $max =~ ^[0-9]+$ ]] || max=""
    if [[ -z $max ]] || ((max < GPUFLEET_FABRIC_MTU)); then
      log "$dev takes at most MTU ${max:-unknown}, not $GPUFLEET_FABRIC_MTU: its MTU stays"
      continue
    fi
    ip link set dev "$dev" mtu "$GPUFLEET_FABRIC_MTU" || log "could not set MTU $GPUFLEET_FABRIC_MTU on $dev"
  done
}

# NVSwitches on the PCI bus (images/nodecheck/host.py) need the fabric manager, whatever the catalog says.
start_fabric_manager_for_nvswitches() {
  local dev
  for dev in "$GPUFLEET_SYS_PCI"/*; do
    [[ $(cat "$dev/vendor" 2>/dev/null) == 0x10de && $(cat "$dev/class" 2>/dev/null) == 0x0680* ]] || continue
    systemctl is-active --quiet nvidia-fabricmanager.service && return 0
    log "NVSwitch ${dev##*/} on the PCI bus: starting the fabric manager"
    systemctl start nvidia-fabricmanager.service || log "the fabric manager did not start"
    return 0
  done
}

# Where the launch path cannot require metadata tokens, only root (the node scripts) may reach the
# metadata service: workloads and their SSRF bugs cannot read the node role's credentials.
guard_metadata() {
  local service=100.100.100.200
  [[ ${GPUFLEET_METADATA_GUARD:-} == root-only ]] || return 0
  iptables -C OUTPUT -d "$service" -m owner ! --uid-owner 0 -j REJECT 2>/dev/null ||
    iptables -I OUTPUT -d "$service" -m owner ! --uid-owner 0 -j REJECT
  iptables -C FORWARD -d "$service" -j REJECT 2>/dev/null || iptables -I FORWARD -d "$service" -j REJECT
}
