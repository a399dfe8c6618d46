#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Install the cloud's node agents at their pinned versions: on AWS the CloudWatch agent (GPU metrics, the
# bootstrap configures it), the FSx for Lustre client (the bootstrap mounts storage.shared) and the AWS CLI; on Azure the Azure
# Managed Lustre client (the bootstrap mounts storage.shared); on Alibaba Cloud the aliyun CLI (gpufleet-gpu-health
# publishes to CloudMonitor with it).
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

require GPUFLEET_CLOUD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

case "$GPUFLEET_CLOUD" in
    aws)
        require CLOUDWATCH_AGENT_VERSION CLOUDWATCH_AGENT_URL LUSTRE_CLIENT_URL LUSTRE_CLIENT_KEY_URL UBUNTU_CODENAME
        fetch "$CLOUDWATCH_AGENT_URL" "$work/amazon-cloudwatch-agent.deb" "${CLOUDWATCH_AGENT_SHA256:-}"
        apt_install "$work/amazon-cloudwatch-agent.deb"
        # FSx user guide, install-lustre-client: AWS's key and repository, modules for the running kernel
        # (apt reads an armored .asc key in signed-by); the key is kept only if it is the lock's fingerprint.
        key=/usr/share/keyrings/fsx-ubuntu-public-key.asc
        mkdir -p "${GPUFLEET_ROOT:-}/usr/share/keyrings" "${GPUFLEET_ROOT:-}/etc/apt/sources.list.d"
        fetch_key "$LUSTRE_CLIENT_KEY_URL" "${GPUFLEET_ROOT:-}$key" "${LUSTRE_CLIENT_KEY_FINGERPRINT:-}"
        # One suite per Ubuntu release (jammy, noble): the base image's, rendered from the lock.
        echo "deb [signed-by=$key] $LUSTRE_CLIENT_URL $UBUNTU_CODENAME main" \
            >"${GPUFLEET_ROOT:-}/etc/apt/sources.list.d/fsxlustreclientrepo.list"
        apt_get update
        # The modules of the kernel the bake runs, and lustre-client-modules-aws, which pulls the modules of each
        # later kernel with it (FSx guide, Ubuntu): a kernel upgrade never leaves Lustre behind.
        apt_install "lustre-client-modules-$(uname -r)" lustre-client-modules-aws
        # The AWS CLI v2 the node scripts call (lifecycle actions, metrics, instance health), checked by its signature.
        require AWS_CLI_URL AWS_CLI_SIGNATURE_URL AWS_CLI_PGP_KEY_URL AWS_CLI_PGP_FINGERPRINT
        fetch_signed "$AWS_CLI_URL" "$work/awscliv2.zip" "$AWS_CLI_SIGNATURE_URL" "$AWS_CLI_PGP_KEY_URL" \
            "$AWS_CLI_PGP_FINGERPRINT"
        unzip_to "$work/awscliv2.zip" "$work"
        "$work/aws/install" --install-dir "${GPUFLEET_ROOT:-}/usr/local/aws-cli" \
            --bin-dir "${GPUFLEET_ROOT:-}/usr/local/bin"
        ;;
    alicloud)
        # The aliyun CLI: gpufleet-gpu-health publishes CloudMonitor custom metrics and sets ESS instance health.
        require ALIYUN_CLI_VERSION ALIYUN_CLI_URL
        fetch "$ALIYUN_CLI_URL" "$work/aliyun-cli.tgz" "${ALIYUN_CLI_SHA256:-}"
        mkdir -p "${GPUFLEET_ROOT:-}/usr/local/bin"
        tar -xzf "$work/aliyun-cli.tgz" -C "${GPUFLEET_ROOT:-}/usr/local/bin" aliyun
        ;;
    azure)
        # AMLFS client-install.md: Ubuntu 22.04 clients on 5.15.0-*-azure only; the image boots HWE. Boot LTS, held.
        require AMLFS_LUSTRE_CLIENT_VERSION AMLFS_LUSTRE_CLIENT_URL AMLFS_LUSTRE_CLIENT_KEY_URL LUSTRE_KERNEL_VERSION
        apt_get update
        lts=(linux-image-azure-lts-22.04 linux-headers-azure-lts-22.04)
        apt_install "${lts[@]}"
        echo "linux-base linux-base/removing-running-kernel boolean false" | debconf-set-selections
        stale=(linux-azure linux-image-azure linux-headers-azure linux-tools-azure linux-cloud-tools-azure)
        shopt -s nullglob
        for k in "${GPUFLEET_ROOT:-}"/boot/vmlinuz-*; do
            k=${k##*/vmlinuz-}
            [[ $k == "$LUSTRE_KERNEL_VERSION"-* ]] \
                || mapfile -t -O "${#stale[@]}" stale < <(dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' \
                    "linux-*-$k" 2>/dev/null | awk '$1 == "ii" {print $2}')
        done
        apt_get purge -y "${stale[@]}"
        key=/usr/share/keyrings/microsoft.asc
        mkdir -p "${GPUFLEET_ROOT:-}/usr/share/keyrings" "${GPUFLEET_ROOT:-}/etc/apt/sources.list.d"
        fetch_key "$AMLFS_LUSTRE_CLIENT_KEY_URL" "${GPUFLEET_ROOT:-}$key" "${AMLFS_LUSTRE_CLIENT_KEY_FINGERPRINT:-}"
        echo "deb [arch=amd64 signed-by=$key] $AMLFS_LUSTRE_CLIENT_URL/ jammy main" \
            >"${GPUFLEET_ROOT:-}/etc/apt/sources.list.d/amlfs.list"
        apt_get update
        client=amlfs-lustre-client-dkms-$AMLFS_LUSTRE_CLIENT_VERSION
        apt_install "$client"
        kernels=("${GPUFLEET_ROOT:-}"/boot/vmlinuz-*)
        shopt -u nullglob
        [[ ${#kernels[@]} -gt 0 ]] || die "no kernel left in /boot"
        for k in "${kernels[@]}"; do
            k=${k##*/vmlinuz-}
            [[ $k == "$LUSTRE_KERNEL_VERSION"-* ]] || die "kernel $k: not the Lustre client's series"
            dkms autoinstall -k "$k"
            for m in lustre nvidia; do
                modinfo -b "${GPUFLEET_ROOT:-/}" -k "$k" $m >/dev/null || die "no $m module for kernel $k"
            done
        done
        apt_hold "${lts[@]}" "$client" lustre-client lustre-client-modules-dkms
        ;;
    *)
        die "GPUFLEET_CLOUD: unknown cloud '${GPUFLEET_CLOUD}' (aws, azure or alicloud)"
        ;;
esac
