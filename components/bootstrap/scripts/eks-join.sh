#!/bin/bash
# Join the EKS cluster with the image's bootstrap script. gpufleet-eks-join.service requires the node check's unit
# and runs after it, so only a node whose check passed gets here; the kubelet's own units carry the same
# requirement (drop-ins), so after a reboot the kubelet waits for the check again and stays down if it fails.
set -euo pipefail
# shellcheck source=/dev/null
. "${GPUFLEET_LIB:-/usr/local/lib/gpufleet}/common.sh"
# shellcheck source=/dev/null
. "$GPUFLEET_ETC/eks.env"
STATE=${GPUFLEET_STATE:-/var/lib/gpufleet}
BOOTSTRAP=${GPUFLEET_EKS_BOOTSTRAP:-/etc/eks/bootstrap.sh}

if [[ -e $STATE/eks-joined ]]; then
  log "joined at first boot; the kubelet starts on its own once the node check passed"
  exit 0
fi

# Spot or on-demand (IMDS instance-life-cycle), as node.kubernetes.io/lifecycle: a kubelet may set labels under
# node.kubernetes.io/ on itself, and the termination handler runs on the spot nodes by it.
labels=$GPUFLEET_EKS_LABELS
if token=$(imds_token) && lifecycle=$(imds_get "$token" instance-life-cycle) && [[ $lifecycle =~ ^[a-z-]+$ ]]; then
  labels="$labels,node.kubernetes.io/lifecycle=$lifecycle"
else
  log "instance-life-cycle unreadable: the node registers without node.kubernetes.io/lifecycle"
fi

# EFA nodes: containerd's drop-in lifts the locked-memory limit its containers inherit; a containerd started before
# cloud-init wrote the drop-in (runcmd reloaded the units) keeps the old limit until it restarts. Nothing runs yet.
if [[ $GPUFLEET_EKS_RESTART_CONTAINERD == true ]]; then
  systemctl try-restart containerd.service
fi

args="--node-labels=$labels"
# Canonical's bootstrap.sh configures the kubelet snap for the runtime it is told; GPU nodes use the NVIDIA
# container runtime the image installs (canonical/ubuntu-cloud-docs docs/aws/aws-how-to/kubernetes/
# enable-gpus-on-eks.rst:49, "--container-runtime nvidia-container-runtime").
[[ -z $GPUFLEET_EKS_TAINTS ]] || args="$args --register-with-taints=$GPUFLEET_EKS_TAINTS"
"$BOOTSTRAP" "$GPUFLEET_EKS_CLUSTER" \
  --apiserver-endpoint "$GPUFLEET_EKS_ENDPOINT" \
  --b64-cluster-ca "$GPUFLEET_EKS_CA" \
  --dns-cluster-ip "$GPUFLEET_EKS_DNS_IP" \
  --container-runtime nvidia-container-runtime \
  --kubelet-extra-args "$args"
mkdir -p "$STATE"
touch "$STATE/eks-joined"
log "joined EKS cluster $GPUFLEET_EKS_CLUSTER"
