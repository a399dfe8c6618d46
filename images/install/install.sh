#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Bake one gpufleet image: pinned GPU stack, the cloud's fabric stack, and the node check.
# Usage: install.sh --env FILE (--instance-type TYPE | --nvswitch yes|no)
#   FILE: pins rendered from images/lock.yaml by components.lock.render_install_env(profile, cloud).
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
# shellcheck source=/dev/null
source "$env_file"

if [[ -z "$nvswitch" ]]; then
    [[ -n "$instance_type" ]] || die "give --instance-type or --nvswitch yes|no"
    nvswitch=no
    for t in ${NVSWITCH_INSTANCE_TYPES:-}; do
        [[ "$t" == "$instance_type" ]] && nvswitch=yes
    done
fi
[[ "$nvswitch" == yes || "$nvswitch" == no ]] || die "--nvswitch: must be yes or no"

export GPUFLEET_PROFILE GPUFLEET_CLOUD DRIVER_VERSION DRIVER_PINNING_PACKAGE FABRIC_MANAGER_VERSION \
    CUDA_VERSION NCCL_VERSION DCGM_VERSION APT_PINS NVIDIA_ML_PY_VERSION
export EFA_INSTALLER_VERSION EFA_INSTALLER_URL EFA_INSTALLER_SHA256 AWS_OFI_NCCL_VERSION \
    DOCA_VERSION DOCA_URL DOCA_SHA256 ERDMA_VERSION ERDMA_URL ERDMA_SHA256
export CLOUDWATCH_AGENT_VERSION CLOUDWATCH_AGENT_URL CLOUDWATCH_AGENT_SHA256 LUSTRE_CLIENT_VERSION LUSTRE_CLIENT_URL \
    ALIYUN_CLI_VERSION ALIYUN_CLI_URL ALIYUN_CLI_SHA256
export AMLFS_LUSTRE_CLIENT_VERSION AMLFS_LUSTRE_CLIENT_URL

bash "$here/gpu-stack.sh" "$nvswitch"
bash "$here/fabric.sh"
bash "$here/agents.sh"
bash "$here/nodecheck.sh"
