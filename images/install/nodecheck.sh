#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Install the node check to /opt/gpufleet/nodecheck with the wrapper /usr/local/bin/gpufleet-nodecheck.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

require NVIDIA_ML_PY_VERSION NVIDIA_ML_PY_URL NVIDIA_ML_PY_SHA256
root=${GPUFLEET_ROOT:-}
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest="$root/opt/gpufleet/nodecheck"

mkdir -p "$dest/images" "$root/usr/local/bin"
cp "$src/__init__.py" "$dest/images/__init__.py"
cp -R "$src/nodecheck" "$dest/images/"
rm -rf "$dest/images/nodecheck/__pycache__"
# No pip on Ubuntu's images: the pinned wheel, checked by sha256, unpacked as pip --target would (pure Python).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
wheel="$work/nvidia_ml_py-${NVIDIA_ML_PY_VERSION}-py3-none-any.whl"
fetch "$NVIDIA_ML_PY_URL" "$wheel" "$NVIDIA_ML_PY_SHA256"
mkdir -p "$dest/vendor"
unzip_to "$wheel" "$dest/vendor"

cat > "$root/usr/local/bin/gpufleet-nodecheck" <<'WRAPPER'
#!/usr/bin/env bash
# Compare this node with /etc/gpufleet/expect.json (exit 0 healthy, 1 drift, 2 usage).
export PYTHONPATH=/opt/gpufleet/nodecheck:/opt/gpufleet/nodecheck/vendor
exec python3 -m images.nodecheck --expect /etc/gpufleet/expect.json "$@"
WRAPPER
chmod 0755 "$root/usr/local/bin/gpufleet-nodecheck"
