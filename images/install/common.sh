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

apt_install() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"
}
