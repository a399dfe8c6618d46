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
        [[ -n "${!name:-}" ]] || die "missing pin ${name} (render it with components.lock.render_install_env)"
    done
}

# fetch URL DEST [SHA256]: download over TLS, verify the checksum when the lock publishes one.
fetch() {
    local url=$1 dest=$2 sha=${3:-}
    curl -fsSL --retry 3 -o "$dest" "$url"
    if [[ -n "$sha" ]]; then
        # A here-string, not a pipe: no SIGPIPE under pipefail when the reader exits early.
        sha256sum --check --strict - <<<"${sha}  ${dest}"
    fi
}

# verify_signature FILE SIG KEY FINGERPRINT: SIG must be a good signature of FILE by the primary key FINGERPRINT
# (KEY armored). gpgv: apt depends on it, so every Ubuntu has it; it reads binary keys only, and exits 0 for an
# expired key too, so its VALIDSIG line is what is checked.
verify_signature() {
    local file=$1 sig=$2 key=$3 fingerprint=$4 keyring status
    keyring=$(mktemp)
    # The armor's body: its base64 lines, less headers (Key: value) and the checksum (=...).
    python3 -c 'import base64, sys
body = open(sys.argv[1]).read().split("-----")[2].splitlines()
sys.stdout.buffer.write(base64.b64decode("".join(w for w in body if w and ":" not in w and w[0] != "=")))' \
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

apt_install() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"
}
