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
apt_install "$work/cuda-keyring.deb"
apt_get update
# The pinning metapackage holds every driver package at DRIVER_VERSION; nvidia-open follows it.
apt_install "$DRIVER_PINNING_PACKAGE"
# The open kernel modules are built for the kernel the image boots (kernel.sh installed its headers), explicitly: the
# package's DKMS hook builds for the running kernel, which on Azure is not it. On Azure DOCA's mlnx-ofed-kernel is
# built for it already (fabric.sh), so nvidia-peermem builds against DOCA's ib_core.
kernel=$(boot_kernel)
apt_install nvidia-open "${pins[@]}"
dkms_build "$kernel"
# A module DKMS failed to build leaves the packages installed: only dkms status says it was built for this kernel.
[[ $(dkms status -m nvidia -v "$DRIVER_VERSION" -k "$kernel") == *": installed"* ]] \
    || die "dkms: the nvidia ${DRIVER_VERSION} module is not installed for kernel ${kernel}"
apt_hold "$DRIVER_PINNING_PACKAGE" nvidia-open "${packages[@]}"

mkdir -p "${GPUFLEET_ROOT:-}/etc/systemd/system" "${GPUFLEET_ROOT:-}/etc/modules-load.d"
cp "$(dirname "${BASH_SOURCE[0]}")/nvidia-persistenced.service" "${GPUFLEET_ROOT:-}/etc/systemd/system/"
systemctl enable nvidia-persistenced
if [[ "${GPUFLEET_CLOUD:-}" == azure ]]; then
    # GPUDirect RDMA over InfiniBand: the driver came after DOCA-OFED (install.sh), so nvidia-peermem is built
    # against its ib_core; loaded at boot as azhpc-images does (the node check verifies it on IB groups).
    echo nvidia-peermem >"${GPUFLEET_ROOT:-}/etc/modules-load.d/nvidia-peermem.conf"
fi
# nv-hostengine: the bootstrap's DCGM error watch (gpufleet-gpu-health) reads through it.
systemctl enable nvidia-dcgm
if [[ "$nvswitch" == yes ]]; then
    systemctl disable nvidia-fabricmanager  # one image serves both kinds: the node bootstrap starts it where the group's type has NVSwitches
else
    # Fabric manager is installed for version parity but must not run without NVSwitches.
    systemctl disable nvidia-fabricmanager
fi
