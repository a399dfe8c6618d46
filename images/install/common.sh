#!/usr/bin/env bash
# Helpers sourced by the gpufleet installer scripts. GPUFLEET_ROOT prefixes every path written (tests).
set -euo pipefail

die() {
    echo "gpufleet-install: $*" >&2
    exit 2
}

# require NAME...: fail naming the first pin that is missing from the environment.
require() {
    local name
    for name in "$@"; do
        [[ -n "${!name:-}" ]] || die "missing pin ${name} (render it with gpufleet.lock.render_install_env)"
    done
}

# fetch URL DEST SHA256: download over TLS and check the lock's sha256. Fails closed: nothing is fetched without one
# (fetch_signed checks a vendor signature instead, fetch_key a key's fingerprint).
fetch() {
    local url=$1 dest=$2 sha=${3:-}
    [[ -n "$sha" ]] || die "${url}: the lock pins no sha256 for it (nor a signature and key): refusing to use it"
    curl -fsSL --retry 3 -o "$dest" "$url"
    # A here-string, not a pipe: no SIGPIPE under pipefail when the reader exits early.
    sha256sum --check --strict - <<<"${sha}  ${dest}"
}

# fetch_signed URL DEST SIG_URL KEY_URL FINGERPRINT: download URL and its detached signature; the key's fingerprint
# (computed by gpgv, not read from the download) must be the lock's.
fetch_signed() {
    local url=$1 dest=$2 sig_url=$3 key_url=$4 fingerprint=$5
    [[ -n "$sig_url" && -n "$key_url" && -n "$fingerprint" ]] \
        || die "${url}: the lock pins no signature_url, pgp_key_url and pgp_fingerprint for it: refusing to use it"
    curl -fsSL --retry 3 -o "$dest" "$url"
    curl -fsSL --retry 3 -o "$dest.sig" "$sig_url"
    curl -fsSL --retry 3 -o "$dest.key" "$key_url"
    verify_signature "$dest" "$dest.sig" "$dest.key" "$fingerprint"
}

# fetch_key URL DEST FINGERPRINT: an apt repository's signing key, kept only when its one primary key is the lock's.
fetch_key() {
    local url=$1 dest=$2 fingerprint=$3 found
    [[ -n "$fingerprint" ]] || die "${url}: the lock pins no key_fingerprint for this signing key: refusing to trust it"
    curl -fsSL --retry 3 -o "$dest" "$url"
    found=$(gpg --show-keys --with-colons "$dest" 2>/dev/null | awk -F: '$1 == "pub" {p = 1} $1 == "fpr" && p {print $10; p = 0}')
    [[ "$found" == "$fingerprint" ]] || { rm -f "$dest"; die "${url}: key ${found:-unreadable} is not ${fingerprint}"; }
}

# verify_signature FILE SIG KEY FINGERPRINT: SIG must be a good signature of FILE by the primary key FINGERPRINT
# (KEY armored or binary). gpgv: apt depends on it, so every Ubuntu has it; it reads binary keys only, and exits 0 for
# an expired key too, so its VALIDSIG line is what is checked.
verify_signature() {
    local file=$1 sig=$2 key=$3 fingerprint=$4 keyring status
    keyring=$(mktemp)
    # An armored key's body: its base64 lines, less headers (Key: value) and the checksum (=...).
    python3 -c 'import base64, sys
data = open(sys.argv[1], "rb").read()
if data.startswith(b"-----"):
    body = data.decode().split("-----")[2].splitlines()
    data = base64.b64decode("".join(w for w in body if w and ":" not in w and w[0] != "="))
sys.stdout.buffer.write(data)' \
        "$key" >"$keyring"
    status=$(gpgv --status-fd 1 --keyring "$keyring" "$sig" "$file" 2>/dev/null) || true
    rm -f "$keyring"
    # VALIDSIG <signing key fpr> <date> ... <primary key fpr>
    [[ $(awk '$2 == "VALIDSIG" {print $NF}' <<<"$status") == "$fingerprint" ]] \
        || die "$(basename "$file"): no good signature by ${fingerprint}"
}

# unzip_to ZIP DEST: python3's zipfile (no unzip on Ubuntu's cloud images), keeping modes.
unzip_to() {
    python3 -c 'import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as archive:
    for member in archive.infolist():
        path = archive.extract(member, sys.argv[2])
        if member.external_attr >> 16:
            os.chmod(path, member.external_attr >> 16 & 0o7777)' "$1" "$2"
}

# Every apt call waits up to 10 minutes for the dpkg lock (DPkg::Lock::Timeout, apt >= 1.9.11) instead of failing on
# "Could not get lock" while the builder VM's own apt runs finish (Azure/az-hop #797, canonical/cloud-init #2908).
APT_LOCK_TIMEOUT=600
apt_get() {
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=$APT_LOCK_TIMEOUT "$@"
}

# apt_install PACKAGE|FILE.deb...: a local .deb (a path) goes through apt too, so it waits for the lock as well.
apt_install() {
    apt_get install -y --no-install-recommends "$@"
}

apt_hold() {
    apt-mark -o DPkg::Lock::Timeout=$APT_LOCK_TIMEOUT hold "$@"
}

# boot_kernel: the kernel the image boots, as kernel.sh chose and recorded it (every module is built for it).
boot_kernel() {
    local record="${GPUFLEET_ROOT:-}/etc/gpufleet/boot-kernel"
    [[ -s "$record" ]] || die "${record}: no boot kernel recorded (kernel.sh runs before any module is built)"
    cat "$record"
}

# dkms_build KERNEL: build and install every DKMS module on the machine for KERNEL. A package's own DKMS hook builds
# for the running kernel, which on Azure is not the one the image boots (no reboot there: kernel.sh). mlnx-ofed-kernel
# is installed first, by itself: iser, isert and srp build against it, and `dkms autoinstall` takes modules in name
# order. The BUILD_DEPENDS files (as Azure/azhpc-images @8e9d055 packer/scripts/prerequisites.sh
# configure_ofed_dkms_build_depends writes them) order autoinstall from DKMS 3.0 on; jammy's 2.8.7 reads no
# /etc/dkms/<module>.conf there (tests/images/test_dkms_jammy.py).
dkms_build() {
    local kernel=$1 module ofed
    if [[ -d "${GPUFLEET_ROOT:-}/var/lib/dkms/mlnx-ofed-kernel" ]]; then
        mkdir -p "${GPUFLEET_ROOT:-}/etc/dkms"
        for module in iser isert srp; do
            echo 'BUILD_DEPENDS="mlnx-ofed-kernel"' >"${GPUFLEET_ROOT:-}/etc/dkms/$module.conf"
        done
        # `dkms status -m M` lines read "M/VERSION, KERNEL, ARCH: STATE" (or "M/VERSION: added").
        ofed=$(dkms status -m mlnx-ofed-kernel | awk -F'[,:]' 'NR == 1 {print $1}')
        [[ -n "$ofed" ]] || die "dkms: mlnx-ofed-kernel is not added"
        [[ $(dkms status -m "${ofed%%/*}" -v "${ofed#*/}" -k "$kernel") == *": installed"* ]] \
            || dkms install "$ofed" -k "$kernel"
    fi
    dkms autoinstall -k "$kernel"
}

# settle_machine: before the first apt call of a bake. The builder is a booted VM (Image Builder, Azure VM Image
# Builder and Alibaba's image builder all run on one): cloud-init may still install packages, so wait for it (exit 1
# is a critical error; 2, recoverable errors since cloud-init 23.4, is done: cloud-init docs, failure_states
# "error codes"). The lock timeout goes into apt.conf.d too, for the apt-get the vendor installers run (EFA, eRDMA).
# apt's periodic timers are masked in the image: a node must not upgrade away from the lock on boot.
settle_machine() {
    mkdir -p "${GPUFLEET_ROOT:-}/etc/apt/apt.conf.d"
    echo "DPkg::Lock::Timeout \"$APT_LOCK_TIMEOUT\";" >"${GPUFLEET_ROOT:-}/etc/apt/apt.conf.d/90gpufleet-lock-timeout"
    if command -v cloud-init >/dev/null; then
        local rc=0
        cloud-init status --wait >/dev/null || rc=$?
        [[ $rc -ne 1 ]] || die "cloud-init failed on the builder VM (cloud-init status --long says why)"
    fi
    systemctl mask apt-daily.timer apt-daily-upgrade.timer apt-daily.service apt-daily-upgrade.service \
        unattended-upgrades.service
    systemctl stop apt-daily.timer apt-daily-upgrade.timer
}
