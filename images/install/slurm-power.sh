#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Install the head node's power program (ResumeProgram, SuspendProgram and the queue watcher run it) to
# /opt/gpufleet/slurm-power with the wrapper /usr/local/bin/gpufleet-slurm-power: the program's modules the bundle
# carries (gpufleet/lock/bundle.py power_program_files) and the cloud's SDK wheels, as the node check is installed.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

require GPUFLEET_CLOUD
root=${GPUFLEET_ROOT:-}
if [[ -z "${SLURM_POWER_WHEELS:-}" ]]; then
    # A lock profile without this cloud's slurm.power_sdk: its stacks refuse groups that scale with the queue
    # (components/slurm/power_units.py refuse_elastic_without_power_program).
    echo "gpufleet-install: no power program SDK pinned for ${GPUFLEET_CLOUD}: the image carries no gpufleet-slurm-power"
    exit 0
fi
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dest="$root/opt/gpufleet/slurm-power"
[[ -f "$src/components/clouds/slurm_power.py" ]] || die "$src/components: the bundle carries no power program"

mkdir -p "$dest/vendor" "$root/usr/local/bin"
cp -R "$src/components" "$dest/"
find "$dest/components" -name __pycache__ -prune -exec rm -rf {} +
# No pip on Ubuntu's images: each pinned wheel, checked by sha256, unpacked as pip --target would. The lock pins
# only wheels for the image's python3 (CPython 3.10, x86_64, glibc 2.35: gpufleet/lock/power_sdk.py), pure-Python
# or compiled (cp310 or abi3 manylinux); every one keeps its modules at the archive's root (read when pinned: no
# .data/purelib or platlib tree), so unpacking is installing.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
read -r -a wheels <<<"$SLURM_POWER_WHEELS"
((${#wheels[@]} % 2 == 0)) || die "SLURM_POWER_WHEELS: pairs of URL and sha256 expected"
for ((i = 0; i < ${#wheels[@]}; i += 2)); do
    wheel="$work/$(basename "${wheels[i]}")"
    fetch "${wheels[i]}" "$wheel" "${wheels[i + 1]}"
    unzip_to "$wheel" "$dest/vendor"
done

# -I: slurmctld runs the programs as SlurmUser; neither its environment nor a user's site-packages may change which
# modules run. The paths are set here instead of PYTHONPATH, which -I ignores.
cat >"$root/usr/local/bin/gpufleet-slurm-power" <<WRAPPER
#!/bin/sh
# Slurm's power program: resume HOSTLIST | suspend HOSTLIST | watch (components/clouds/slurm_power.py).
exec python3 -I -c 'import sys; sys.path[:0] = ["$dest", "$dest/vendor"]
from components.clouds.slurm_power import main
sys.exit(main())' "\$@"
WRAPPER
chmod 0755 "$root/usr/local/bin/gpufleet-slurm-power"
