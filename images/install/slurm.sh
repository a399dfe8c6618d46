#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Slurm for `scheduler: slurm` clusters, on a VM image whose profile pins it (images/lock.yaml `slurm:`): munge from
# Ubuntu's archive, SchedMD's slurm-smd packages from their signed repository, nvidia-container-cli, enroot and pyxis.
# One image serves the head node and the nodes, so both daemons are installed; every service is left off and no munge
# key stays on the image: the node bootstrap fetches the cluster's key and starts munge and slurmctld (head node) or
# munge and slurmd (a node, after its node check).
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

require SLURM_VERSION SLURM_PACKAGES_SOURCE SLURM_PACKAGES_KEY_URL SLURM_PACKAGES_APT_PINS SLURM_MUNGE_APT_PINS \
    SLURM_CONTAINER_CLI_SOURCE SLURM_CONTAINER_CLI_KEY_URL SLURM_CONTAINER_CLI_APT_PINS ENROOT_VERSION ENROOT_URL \
    ENROOT_CAPS_URL PYXIS_VERSION PYXIS_URL
root=${GPUFLEET_ROOT:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# add_repository NAME SOURCE KEY_URL FINGERPRINT: an apt source trusted only through its own key (signed-by), which is
# kept only when it is the lock's fingerprint; apt reads the armored key at the path written (GPUFLEET_ROOT is empty
# on a builder).
add_repository() {
    local name=$1 source=$2 key_url=$3 fingerprint=$4
    local key=$root/usr/share/keyrings/gpufleet-$name.asc
    mkdir -p "$root/usr/share/keyrings" "$root/etc/apt/sources.list.d"
    fetch_key "$key_url" "$key" "$fingerprint"
    echo "deb [arch=amd64 signed-by=$key] $source" >"$root/etc/apt/sources.list.d/gpufleet-$name.list"
}

# install_held PIN...: install name=version pins and hold them, so no later apt run moves the image off the lock.
install_held() {
    local pin
    for pin in "$@"; do
        [[ "$pin" == *=* ]] || die "pin '${pin}' has no =version"
    done
    apt_install "$@"
    apt_hold "${@%%=*}"
}

add_repository slurm "$SLURM_PACKAGES_SOURCE" "$SLURM_PACKAGES_KEY_URL" "${SLURM_PACKAGES_KEY_FINGERPRINT:-}"
add_repository libnvidia-container "$SLURM_CONTAINER_CLI_SOURCE" "$SLURM_CONTAINER_CLI_KEY_URL" \
    "${SLURM_CONTAINER_CLI_KEY_FINGERPRINT:-}"
apt_get update

read -r -a munge_pins <<<"$SLURM_MUNGE_APT_PINS"
read -r -a slurm_pins <<<"$SLURM_PACKAGES_APT_PINS"
read -r -a container_cli_pins <<<"$SLURM_CONTAINER_CLI_APT_PINS"
install_held "${munge_pins[@]}"
install_held "${slurm_pins[@]}"
install_held "${container_cli_pins[@]}"

# enroot and enroot+caps (unprivileged image import), NVIDIA's release .debs checked against the lock's sha256.
fetch "$ENROOT_URL" "$work/enroot.deb" "${ENROOT_SHA256:-}"
fetch "$ENROOT_CAPS_URL" "$work/enroot+caps.deb" "${ENROOT_CAPS_SHA256:-}"
apt_install "$work/enroot.deb" "$work/enroot+caps.deb"
apt_hold enroot enroot+caps

# pyxis, built against the installed Slurm's spank.h (its README: a plugin built for another Slurm release is refused
# with "Incompatible plugin version"); `make install` writes the plugin and its one-line plugstack entry.
fetch "$PYXIS_URL" "$work/pyxis.tar.gz" "${PYXIS_SHA256:-}"
mkdir -p "$work/pyxis"
tar -xzf "$work/pyxis.tar.gz" -C "$work/pyxis" --strip-components=1
apt_install gcc make
make -C "$work/pyxis" install DESTDIR="$root" >/dev/null
# plugstack.conf itself, not an include of plugstack.conf.d: configless nodes get the controller's plugstack.conf, and
# an included file only where its name has no path separator (SchedMD/slurm @slurm-25-11-5-1 doc/html/
# configless_slurm.shtml lines 98-102); the plugin's path is the same on every machine of the image.
mkdir -p "$root/etc/slurm"
install -m 644 "$root/usr/local/share/pyxis/pyxis.conf" "$root/etc/slurm/plugstack.conf"

# What the image check compares with the lock: the installed Slurm release and pyxis version.
mkdir -p "$root/etc/gpufleet"
echo "$PYXIS_VERSION" >"$root/etc/gpufleet/pyxis-version"

# The slurm user: slurm.conf's SlurmUser and slurmctld.service's User= (SchedMD/slurm @slurm-25-11-5-1
# etc/slurmctld.service.in line 11), which no slurm-smd package creates (their debian/ has no maintainer script). A
# system user made at the bake has the same uid on the head node and every node, which boot this one image.
mkdir -p "$root/usr/lib/sysusers.d"
echo 'u slurm - "Slurm workload manager" /var/lib/slurm /usr/sbin/nologin' \
    >"$root/usr/lib/sysusers.d/gpufleet-slurm.conf"
systemd-sysusers ${root:+"--root=$root"} "$root/usr/lib/sysusers.d/gpufleet-slurm.conf"

# Off until the node bootstrap starts them; munge's package made a key at install, which every cluster booting this
# image would share: removed, the cluster's own key comes from its secret store at boot.
systemctl disable --now munge.service slurmctld.service slurmd.service
rm -f "$root/etc/munge/munge.key"
