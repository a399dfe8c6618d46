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
        require CLOUDWATCH_AGENT_VERSION CLOUDWATCH_AGENT_URL LUSTRE_CLIENT_URL
        fetch "$CLOUDWATCH_AGENT_URL" "$work/amazon-cloudwatch-agent.deb" "${CLOUDWATCH_AGENT_SHA256:-}"
        dpkg -i "$work/amazon-cloudwatch-agent.deb"
        # FSx user guide, install-lustre-client: AWS's key and repository, modules for the running kernel
        # (apt reads an armored .asc key in signed-by).
        key=/usr/share/keyrings/fsx-ubuntu-public-key.asc
        mkdir -p "${GPUFLEET_ROOT:-}/usr/share/keyrings" "${GPUFLEET_ROOT:-}/etc/apt/sources.list.d"
        fetch "$LUSTRE_CLIENT_URL/fsx-ubuntu-public-key.asc" "${GPUFLEET_ROOT:-}$key"
        echo "deb [signed-by=$key] $LUSTRE_CLIENT_URL jammy main" \
            >"${GPUFLEET_ROOT:-}/etc/apt/sources.list.d/fsxlustreclientrepo.list"
        apt-get update
        # The modules of the kernel the bake runs, and lustre-client-modules-aws, which pulls the modules of each
        # later kernel with it (FSx guide, Ubuntu): a kernel upgrade never leaves Lustre behind.
        apt_install "lustre-client-modules-$(uname -r)" lustre-client-modules-aws
        # The AWS CLI v2 the node scripts call (lifecycle actions, metrics, instance health), checked by its signature.
        require AWS_CLI_URL AWS_CLI_SIGNATURE_URL AWS_CLI_PGP_KEY_URL AWS_CLI_PGP_FINGERPRINT
        fetch "$AWS_CLI_URL" "$work/awscliv2.zip"
        fetch "$AWS_CLI_SIGNATURE_URL" "$work/awscliv2.sig"
        fetch "$AWS_CLI_PGP_KEY_URL" "$work/aws-cli.asc"
        verify_signature "$work/awscliv2.zip" "$work/awscliv2.sig" "$work/aws-cli.asc" "$AWS_CLI_PGP_FINGERPRINT"
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
        # No metrics agent: gpufleet-gpu-health posts the GPU metrics itself. The Azure Managed Lustre client
        # (azure-stack-docs azure-managed-lustre/client-install.md, 2026-04-23): its support matrix lists Ubuntu 22.04
        # clients for the 5.15.0-*-azure kernel series only, while the marketplace image boots the HWE series. So
        # the image boots the LTS kernel (the page's Ubuntu 22.04 steps: linux-image-azure-lts-22.04, the HWE
        # kernels removed), held, with Microsoft's DKMS client compiled for it.
        require AMLFS_LUSTRE_CLIENT_VERSION AMLFS_LUSTRE_CLIENT_URL LUSTRE_KERNEL_VERSION
        apt-get update
        apt_install linux-image-azure-lts-22.04 linux-headers-azure-lts-22.04
        # The build VM runs an HWE kernel: removing it is what makes the image boot the LTS one (linux-base asks
        # before removing the running kernel, and its default answer aborts).
        echo "linux-base linux-base/removing-running-kernel boolean false" | debconf-set-selections
        stale=(linux-azure linux-image-azure linux-headers-azure linux-tools-azure linux-cloud-tools-azure)
        shopt -s nullglob
        for image in "${GPUFLEET_ROOT:-}"/boot/vmlinuz-*; do
            kernel=${image##*/vmlinuz-}
            [[ $kernel == "$LUSTRE_KERNEL_VERSION"-* ]] && continue
            mapfile -t -O "${#stale[@]}" stale < <(dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' \
                "linux-*-$kernel" 2>/dev/null | awk '$1 == "ii" {print $2}')
        done
        DEBIAN_FRONTEND=noninteractive apt-get purge -y "${stale[@]}"
        key=/usr/share/keyrings/microsoft.asc
        mkdir -p "${GPUFLEET_ROOT:-}/usr/share/keyrings" "${GPUFLEET_ROOT:-}/etc/apt/sources.list.d"
        fetch https://packages.microsoft.com/keys/microsoft.asc "${GPUFLEET_ROOT:-}$key"
        echo "deb [arch=amd64 signed-by=$key] $AMLFS_LUSTRE_CLIENT_URL/ jammy main" \
            >"${GPUFLEET_ROOT:-}/etc/apt/sources.list.d/amlfs.list"
        apt-get update
        # One metapackage keeps lustre-client and lustre-client-modules-dkms at one version (client-install.md,
        # DKMS tab); DKMS builds every autoinstall module (Lustre, the GPU driver, DOCA's) for each kernel left.
        apt_install "amlfs-lustre-client-dkms-$AMLFS_LUSTRE_CLIENT_VERSION"
        kernels=()
        for image in "${GPUFLEET_ROOT:-}"/boot/vmlinuz-*; do
            kernels+=("${image##*/vmlinuz-}")
        done
        shopt -u nullglob
        [[ ${#kernels[@]} -gt 0 ]] || die "no kernel left in /boot after installing the LTS kernel"
        for kernel in "${kernels[@]}"; do
            [[ $kernel == "$LUSTRE_KERNEL_VERSION"-* ]] \
                || die "kernel $kernel is outside the Lustre client's supported series $LUSTRE_KERNEL_VERSION-*-azure"
            dkms autoinstall -k "$kernel"
            # The image boots this kernel: the bake fails here, not a node's mount or its GPUs.
            for module in lustre nvidia; do
                modinfo -b "${GPUFLEET_ROOT:-/}" -k "$kernel" "$module" >/dev/null \
                    || die "no $module module for kernel $kernel after DKMS built it"
            done
        done
        # Held: a node's apt never moves the kernel or the client off what the image was baked with.
        apt-mark hold linux-image-azure-lts-22.04 linux-headers-azure-lts-22.04 \
            "amlfs-lustre-client-dkms-$AMLFS_LUSTRE_CLIENT_VERSION" lustre-client lustre-client-modules-dkms
        ;;
    *)
        die "GPUFLEET_CLOUD: unknown cloud '${GPUFLEET_CLOUD}' (aws, azure or alicloud)"
        ;;
esac
