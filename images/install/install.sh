#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Bake one gpufleet image: pinned GPU stack, the cloud's fabric stack, Slurm where pinned, and the node check.
# Usage: install.sh --env FILE (--instance-type TYPE | --nvswitch yes|no)
#   FILE: pins rendered from images/lock.yaml by gpufleet.lock.render_install_env(profile, cloud).
#   NVSwitch is read from --nvswitch, else from whether TYPE is in NVSWITCH_INSTANCE_TYPES.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=common.sh
source "$here/common.sh"

env_file="" instance_type="" nvswitch=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --env) env_file=${2:-}; shift 2 ;;
        --instance-type) instance_type=${2:-}; shift 2 ;;
        --nvswitch) nvswitch=${2:-}; shift 2 ;;
        *) die "unknown argument '$1' (usage: install.sh --env FILE (--instance-type T | --nvswitch yes|no))" ;;
    esac
done
[[ -n "$env_file" && -r "$env_file" ]] || die "--env: need a readable pins file"
# Every pin goes to the scripts below through the environment.
set -a
# shellcheck source=/dev/null
source "$env_file"
set +a

if [[ -z "$nvswitch" ]]; then
    [[ -n "$instance_type" ]] || die "give --instance-type or --nvswitch yes|no"
    nvswitch=no
    for t in ${NVSWITCH_INSTANCE_TYPES:-}; do
        [[ "$t" == "$instance_type" ]] && nvswitch=yes
    done
fi
[[ "$nvswitch" == yes || "$nvswitch" == no ]] || die "--nvswitch: must be yes or no"

settle_machine
# The kernel the image boots first: every module below is built for it, and apt refuses any other kernel.
bash "$here/kernel.sh"

# The order each cloud's own HPC image documents for the fabric stack. Azure/azhpc-images
# (distros/ubuntu22.04/install.sh) installs DOCA-OFED before the NVIDIA driver (nvidia-peermem loads against
# DOCA-OFED's ib_core, as its NVIDIA driver installer notes). On AWS and Alibaba Cloud the GPU stack stays first;
# no documented order for EFA or eRDMA was confirmed here (NOTES: to confirm).
if [[ "$GPUFLEET_CLOUD" == azure ]]; then
    bash "$here/fabric.sh"
    bash "$here/gpu-stack.sh" "$nvswitch"
else
    bash "$here/gpu-stack.sh" "$nvswitch"
    bash "$here/fabric.sh"
fi
if [[ "$GPUFLEET_CLOUD" != alicloud ]]; then
    bash "$here/lustre.sh"
fi
bash "$here/agents.sh"
# A VM image whose profile pins Slurm (its pins name a Slurm release) carries Slurm, munge, enroot and pyxis, and the
# head node's power program.
if [[ -n "${SLURM_VERSION:-}" ]]; then
    bash "$here/slurm.sh"
    bash "$here/slurm-power.sh"
fi
# A Kubernetes node image (its pins name a Kubernetes minor) also gets the container toolkit for containerd.
if [[ -n "${KUBERNETES_VERSION:-}" ]]; then
    bash "$here/container-toolkit.sh"
fi
bash "$here/nodecheck.sh"
