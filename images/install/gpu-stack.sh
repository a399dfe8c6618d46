#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Install the pinned NVIDIA driver, fabric manager, CUDA toolkit, NCCL and DCGM, and hold them.
# Usage: gpu-stack.sh yes|no   (yes: NVSwitch instance type, enable nvidia-fabricmanager)
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

nvswitch=${1:-}
[[ "$nvswitch" == yes || "$nvswitch" == no ]] || die "gpu-stack.sh: first argument must be yes or no (NVSwitch)"
require DRIVER_VERSION DRIVER_PINNING_PACKAGE FABRIC_MANAGER_VERSION APT_PINS CUDA_KEYRING_URL CUDA_KEYRING_SHA256
[[ "$FABRIC_MANAGER_VERSION" == "$DRIVER_VERSION" ]] \
    || die "fabric manager ${FABRIC_MANAGER_VERSION} differs from driver ${DRIVER_VERSION}"

read -r -a pins <<< "$APT_PINS"
packages=()
for pin in "${pins[@]}"; do
    [[ "$pin" == *=* ]] || die "APT_PINS entry '${pin}' has no =version"
    packages+=("${pin%%=*}")
done

# Every package below lives only in NVIDIA's CUDA repository. Add it as NVIDIA's install guide does (network repo):
# the cuda-keyring package carries the repository key and its sources list; checked against the lock first.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fetch "$CUDA_KEYRING_URL" "$work/cuda-keyring.deb" "$CUDA_KEYRING_SHA256"
dpkg -i "$work/cuda-keyring.deb"
apt-get update
# The pinning metapackage holds every driver package at DRIVER_VERSION; nvidia-open follows it.
apt_install "$DRIVER_PINNING_PACKAGE"
apt_install nvidia-open "${pins[@]}"
apt-mark hold "$DRIVER_PINNING_PACKAGE" nvidia-open "${packages[@]}"

systemctl enable nvidia-persistenced
# nv-hostengine: the bootstrap's DCGM error watch (gpufleet-gpu-health) reads through it.
systemctl enable nvidia-dcgm
if [[ "$nvswitch" == yes ]]; then
    systemctl disable nvidia-fabricmanager  # one image serves both kinds: the node bootstrap starts it where the group's type has NVSwitches
else
    # Fabric manager is installed for version parity but must not run without NVSwitches.
    systemctl disable nvidia-fabricmanager
fi
