#!/usr/bin/env bash
# The image check, run on the build VM after the install and again on a fresh VM of the image (AWS's validate and test
# phases, Azure's in-VM validator, Alibaba's last component): it fails on the first missing piece, naming the kernel
# it checks. The kernel is the one kernel.sh chose: the only one in /boot, with the driver's module, the fabric's
# (efa; mlx5_ib and nvidia-peermem; erdma) and Lustre's for it, and every command the node scripts run (NODE_TOOLS,
# gpufleet/lock/node_tools.py: mount.lustre among them where Lustre is mounted). No GPU needed: any build size works.
# Usage: image-check.sh [--booted]   (--booted: the VM booted the image, so it must run that kernel)
set -euo pipefail
# Bash alone reads the files: the only commands run are those checked (modinfo, uname) and command -v.
bundle=${BASH_SOURCE[0]%/images/install/*}
# shellcheck source=/dev/null
source "$bundle/pins.env"
root=${GPUFLEET_ROOT:-}

fail() {
    echo "gpufleet image check: $*" >&2
    exit 1
}

kernel=$(<"$root/etc/gpufleet/boot-kernel") || fail "no boot kernel recorded (/etc/gpufleet/boot-kernel)"
echo "gpufleet image check: kernel $kernel"
if [[ "${1:-}" == --booted ]]; then
    running=$(uname -r)
    [[ "$running" == "$kernel" ]] || fail "the VM runs kernel $running, not the image's kernel $kernel"
fi
for image in "$root"/boot/vmlinuz-*; do
    [[ "${image##*/vmlinuz-}" == "$kernel" ]] || fail "kernel ${image##*/vmlinuz-} is in /boot beside $kernel"
done
case "$GPUFLEET_CLOUD" in
    aws) modules=(nvidia efa lustre) ;;
    azure) modules=(nvidia mlx5_ib nvidia-peermem lustre) ;;
    alicloud) modules=(nvidia erdma) ;;
    *) fail "GPUFLEET_CLOUD: unknown cloud '${GPUFLEET_CLOUD}'" ;;
esac
for module in "${modules[@]}"; do
    modinfo -k "$kernel" "$module" >/dev/null || fail "kernel $kernel has no $module module"
done
for tool in $NODE_TOOLS; do
    command -v "$tool" >/dev/null || fail "$tool is missing"
done
# Slurm where the profile pins it: the release of the lock, pyxis in plugstack.conf, enroot's version, and no munge
# key baked in (each cluster's comes from its secret store).
if [[ -n "${SLURM_VERSION:-}" ]]; then
    found=$(slurmd -V) || fail "slurmd -V failed"
    [[ "$found" == "slurm $SLURM_VERSION" ]] || fail "slurmd -V says '$found', the lock pins Slurm $SLURM_VERSION"
    plugstack=$(<"$root/etc/slurm/plugstack.conf") || fail "no /etc/slurm/plugstack.conf"
    [[ "$plugstack" == *"/spank_pyxis.so"* ]] || fail "/etc/slurm/plugstack.conf does not load pyxis"
    [[ $(<"$root/etc/gpufleet/pyxis-version") == "$PYXIS_VERSION" ]] || fail "pyxis is not version $PYXIS_VERSION"
    found=$(enroot version) || fail "enroot version failed"
    [[ "$found" == "$ENROOT_VERSION" ]] || fail "enroot version says '$found', the lock pins $ENROOT_VERSION"
    [[ ! -e "$root/etc/munge/munge.key" ]] || fail "/etc/munge/munge.key is baked into the image"
    echo "gpufleet image check: Slurm $SLURM_VERSION, pyxis $PYXIS_VERSION, enroot $ENROOT_VERSION"
fi
echo "gpufleet image check: kernel $kernel has ${modules[*]} and every node command"
