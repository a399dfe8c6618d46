#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Kubernetes node images only: the NVIDIA container toolkit from NVIDIA's apt repository at the lock's exact versions,
# configured as containerd's default runtime, on a base image whose kubelet is the profile's Kubernetes minor.
# NVIDIA container toolkit install guide: "With apt: Ubuntu, Debian" (the repository, its gpgkey and the four packages
# at one version) and "Configuring containerd (for Kubernetes)" (nvidia-ctk runtime configure --runtime=containerd).
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

require KUBERNETES_VERSION CONTAINER_TOOLKIT_VERSION CONTAINER_TOOLKIT_APT_PINS CONTAINER_TOOLKIT_URL \
    CONTAINER_TOOLKIT_KEY_URL

# Canonical's EKS images run kubelet from the kubelet-eks snap, channel <minor>.<patch>/stable with refreshes held
# (Ubuntu on AWS docs, "EKS kubelet snap"): the base must be the profile's minor, or the image would join a cluster
# of another version. The version read here is recorded on the image for whoever pins it into the lock.
kubelet=$(snap list kubelet-eks 2>/dev/null | awk '$1 == "kubelet-eks" {print $2}') || true
[[ "$kubelet" == "$KUBERNETES_VERSION".* ]] \
    || die "kubelet-eks ${kubelet:-is not installed}: the base image is not Kubernetes ${KUBERNETES_VERSION}'s"
mkdir -p "${GPUFLEET_ROOT:-}/etc/gpufleet"
echo "$kubelet" >"${GPUFLEET_ROOT:-}/etc/gpufleet/kubelet-version"

# The repository's key is kept only if it is the lock's fingerprint; apt reads the armored key in signed-by (the file
# written here: GPUFLEET_ROOT is empty on a builder).
key=${GPUFLEET_ROOT:-}/usr/share/keyrings/nvidia-container-toolkit-keyring.asc
mkdir -p "${GPUFLEET_ROOT:-}/usr/share/keyrings" "${GPUFLEET_ROOT:-}/etc/apt/sources.list.d"
fetch_key "$CONTAINER_TOOLKIT_KEY_URL" "$key" "${CONTAINER_TOOLKIT_KEY_FINGERPRINT:-}"
echo "deb [signed-by=$key] $CONTAINER_TOOLKIT_URL /" \
    >"${GPUFLEET_ROOT:-}/etc/apt/sources.list.d/nvidia-container-toolkit.list"
apt_get update

read -r -a pins <<<"$CONTAINER_TOOLKIT_APT_PINS"
packages=()
for pin in "${pins[@]}"; do
    [[ "$pin" == *=* ]] || die "CONTAINER_TOOLKIT_APT_PINS entry '${pin}' has no =version"
    packages+=("${pin%%=*}")
done
apt_install "${pins[@]}"
apt_hold "${packages[@]}"

# The default runtime: no RuntimeClass is needed for the device plugin and GPU pods (nvidia-ctk's --set-as-default).
nvidia-ctk runtime configure --runtime=containerd --set-as-default
systemctl restart containerd
