#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Install the cloud's RDMA stack at its pinned version: EFA installer (with aws-ofi-nccl) on AWS,
# DOCA-OFED on Azure, eRDMA on Alibaba Cloud.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

require GPUFLEET_CLOUD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

case "$GPUFLEET_CLOUD" in
    aws)
        require EFA_INSTALLER_VERSION EFA_INSTALLER_URL AWS_OFI_NCCL_VERSION
        # AWS signs each installer tarball (EC2 user guide, "Verify the EFA installer using a GPG signature").
        fetch_signed "$EFA_INSTALLER_URL" "$work/efa.tar.gz" "${EFA_INSTALLER_SIGNATURE_URL:-}" \
            "${EFA_INSTALLER_PGP_KEY_URL:-}" "${EFA_INSTALLER_PGP_FINGERPRINT:-}"
        tar -xzf "$work/efa.tar.gz" -C "$work"
        # The installer bundles aws-ofi-nccl (AWS_OFI_NCCL_VERSION records which one it carries).
        (cd "$work/aws-efa-installer" && ./efa_installer.sh -y)
        ;;
    azure)
        require DOCA_VERSION DOCA_URL DOCA_SHA256
        fetch "$DOCA_URL" "$work/doca-host.deb" "$DOCA_SHA256"
        # The doca-host package adds a local repository holding exactly this DOCA release.
        apt_install "$work/doca-host.deb"
        apt_get update
        apt_install doca-ofed
        apt_hold doca-ofed
        # mlnx-ofed-kernel and the rest of DOCA's modules for the kernel the image boots, before the driver.
        dkms_build "$(boot_kernel)"
        bash "$(dirname "${BASH_SOURCE[0]}")/azure-topology.sh"
        ;;
    alicloud)
        require ERDMA_VERSION ERDMA_URL
        fetch "$ERDMA_URL" "$work/erdma.tar.gz" "${ERDMA_SHA256:-}"
        tar -xzf "$work/erdma.tar.gz" -C "$work"
        (cd "$work/erdma_installer" && ./install.sh --batch)
        ;;
    *)
        die "GPUFLEET_CLOUD: unknown cloud '${GPUFLEET_CLOUD}' (aws, azure or alicloud)"
        ;;
esac
