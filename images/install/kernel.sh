#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Choose the kernel the image boots before anything builds a module, leave it the only kernel in /boot with its
# headers, record it (/etc/gpufleet/boot-kernel) and make apt refuse every other kernel: no metapackage a later step
# installs (lustre-client-modules-aws, a driver's or installer's dependency) can bring a kernel without the modules.
# AWS and Alibaba Cloud: the base image's own kernel, which the bake runs (the base image id is pinned, so its kernel
# is too). Azure: the 5.15 LTS series Microsoft's Lustre client supports on Ubuntu 22.04 (AMLFS client-install.md),
# which the build VM does not run and cannot reboot into (VM Image Builder's only restart customizer is
# WindowsRestart: azure-native ImageTemplateRestartCustomizer), so every DKMS module is built for it explicitly
# (common.sh dkms_build).
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

require GPUFLEET_CLOUD
root=${GPUFLEET_ROOT:-}
apt_get update
stale=()
case "$GPUFLEET_CLOUD" in
    azure)
        require LUSTRE_KERNEL_VERSION
        lts=(linux-image-azure-lts-22.04 linux-headers-azure-lts-22.04)
        apt_install "${lts[@]}"
        apt_hold "${lts[@]}"
        # The HWE kernel the build VM runs goes: linux-base must not stop its removal.
        echo "linux-base linux-base/removing-running-kernel boolean false" | debconf-set-selections
        stale=(linux-azure linux-image-azure linux-headers-azure linux-tools-azure linux-cloud-tools-azure)
        kernel=$(find "$root/boot" -maxdepth 1 -name "vmlinuz-$LUSTRE_KERNEL_VERSION-*-azure" -printf '%f\n' \
            | sed 's/^vmlinuz-//' | sort -V | tail -n 1)
        [[ -n "$kernel" ]] || die "no ${LUSTRE_KERNEL_VERSION}-*-azure kernel in /boot after installing ${lts[*]}"
        ;;
    aws | alicloud)
        kernel=$(uname -r)
        ;;
    *)
        die "GPUFLEET_CLOUD: unknown cloud '${GPUFLEET_CLOUD}' (aws, azure or alicloud)"
        ;;
esac

# Every other kernel goes, with its modules and headers: the image boots the newest in /boot.
shopt -s nullglob
for image in "$root"/boot/vmlinuz-*; do
    other=${image##*/vmlinuz-}
    [[ "$other" == "$kernel" ]] \
        || mapfile -t -O "${#stale[@]}" stale < <(dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' \
            "linux-*-$other" 2>/dev/null | awk '$1 == "ii" {print $2}')
done
shopt -u nullglob
[[ ${#stale[@]} -eq 0 ]] || apt_get purge -y "${stale[@]}"
apt_install "linux-headers-$kernel"

# apt takes the first specific record that matches a package (apt_preferences(5)): the boot kernel's packages keep
# the default priority, every other kernel's is never installable, so a dependency on one fails the apt-get asking.
mkdir -p "$root/etc/apt/preferences.d" "$root/etc/gpufleet"
names=""
for kind in image image-unsigned modules modules-extra headers; do
    names+=" linux-$kind-$kernel"
done
{
    echo "Package:$names"
    echo "Pin: version *"
    echo "Pin-Priority: 500"
    echo
    echo "Package: /^linux-(image|image-unsigned|modules|modules-extra|headers)-[0-9]/"
    echo "Pin: version *"
    echo "Pin-Priority: -1"
} >"$root/etc/apt/preferences.d/gpufleet-boot-kernel"
echo "$kernel" >"$root/etc/gpufleet/boot-kernel"
echo "gpufleet-install: the image boots kernel $kernel"
