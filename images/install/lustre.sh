#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Install the Lustre client the bootstrap mounts storage.shared with, for the kernel the image boots (kernel.sh): on
# AWS the FSx for Lustre client, on Azure the Azure Managed Lustre client. Both clouds' images carry it; Alibaba's none.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

require GPUFLEET_CLOUD
kernel=$(boot_kernel)
# apt reads the armored key in signed-by: the file written here (GPUFLEET_ROOT is empty on a builder).
keys=${GPUFLEET_ROOT:-}/usr/share/keyrings
mkdir -p "$keys" "${GPUFLEET_ROOT:-}/etc/apt/sources.list.d"

case "$GPUFLEET_CLOUD" in
    aws)
        require LUSTRE_CLIENT_URL LUSTRE_CLIENT_KEY_URL UBUNTU_CODENAME
        # FSx user guide, install-lustre-client: AWS's key (kept only if it is the lock's fingerprint) and repository,
        # one suite per Ubuntu release (jammy, noble), the base image's, rendered from the lock.
        fetch_key "$LUSTRE_CLIENT_KEY_URL" "$keys/fsx-ubuntu-public-key.asc" "${LUSTRE_CLIENT_KEY_FINGERPRINT:-}"
        echo "deb [signed-by=$keys/fsx-ubuntu-public-key.asc] $LUSTRE_CLIENT_URL $UBUNTU_CODENAME main" \
            >"${GPUFLEET_ROOT:-}/etc/apt/sources.list.d/fsxlustreclientrepo.list"
        apt_get update
        # The boot kernel's own modules package. Not lustre-client-modules-aws: it follows the newest kernel FSx built
        # and pulls that kernel, with no headers and no nvidia or EFA module for it (kernel.sh makes apt refuse it).
        apt-cache show "lustre-client-modules-$kernel" >/dev/null 2>&1 \
            || die "FSx publishes no lustre-client-modules-$kernel: pin a base image whose kernel FSx builds modules for"
        # mount.lustre is in lustre-client-utils, which the modules package only recommends (lustre-release
        # debian/control.modules.in) and apt_install does not take: named here, or /data never mounts.
        apt_install "lustre-client-modules-$kernel" lustre-client-utils
        apt_hold "lustre-client-modules-$kernel" lustre-client-utils
        ;;
    azure)
        require AMLFS_LUSTRE_CLIENT_VERSION AMLFS_LUSTRE_CLIENT_URL AMLFS_LUSTRE_CLIENT_KEY_URL
        fetch_key "$AMLFS_LUSTRE_CLIENT_KEY_URL" "$keys/microsoft.asc" "${AMLFS_LUSTRE_CLIENT_KEY_FINGERPRINT:-}"
        echo "deb [arch=amd64 signed-by=$keys/microsoft.asc] $AMLFS_LUSTRE_CLIENT_URL/ jammy main" \
            >"${GPUFLEET_ROOT:-}/etc/apt/sources.list.d/amlfs.list"
        apt_get update
        # The DKMS client (Microsoft's DKMS steps for Ubuntu 22.04): lustre-client (mount.lustre) and
        # lustre-client-modules-dkms, built here for the boot kernel. LNet runs over TCP: AMLFS is reached over the
        # VNet, with no InfiniBand line of sight to its servers (install_lustre_client.sh of Azure/azhpc-images
        # @8e9d055), so no o2ib is configured.
        client=amlfs-lustre-client-dkms-$AMLFS_LUSTRE_CLIENT_VERSION
        apt_install "$client"
        dkms_build "$kernel"
        apt_hold "$client" lustre-client lustre-client-modules-dkms
        ;;
    *)
        die "GPUFLEET_CLOUD: Lustre client for aws or azure, not '${GPUFLEET_CLOUD}'"
        ;;
esac
