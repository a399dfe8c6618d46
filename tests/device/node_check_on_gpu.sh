#!/bin/sh
# The node check on a lent GPU machine (the `device` tool; CI never runs this). Prepare here, then run there:
#   here:  .venv/bin/python tests/device/expect_p5.py > tests/device/expect-p5.json   (ignored: carry it)
#   there: sh tests/device/node_check_on_gpu.sh   with OUT set; results land in $OUT, one file per run.
# Runs: the lock's p5 expectation (drift on any other machine: exit 1), the machine's own GPUs and driver (exit 0 on
# a healthy node), the MIG read path, both fabric-manager probes, no instance type, a missing expectation (exit 2).
# probes.txt: what the fabric, memory, CUDA, NVSwitch and RDMA probes read here, and nvidia-smi's view of the same.
# It reads NVML and /proc only: MIG and every other GPU setting stay as they are.
set -u
cd "$(dirname "$0")/../.." || exit 2
nvidia-smi --query-gpu=name,driver_version,persistence_mode,mig.mode.current,ecc.mode.current --format=csv \
  > "$OUT/machine.txt" 2>&1
python3 --version >> "$OUT/machine.txt" 2>&1
# Read-only: the fields mig.sh queries, and the MIG profiles the GPU offers (the catalog's gpufleet/catalog/mig.yaml).
nvidia-smi --query-gpu=index,mig.mode.current,mig.mode.pending --format=csv >> "$OUT/machine.txt" 2>&1
nvidia-smi mig -lgip > "$OUT/mig-profiles.txt" 2>&1
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1 | tr -d ' ')
model=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | sed 's/^NVIDIA //')
count=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
work=$(mktemp -d)
python3 - "$driver" "$model" "$count" "$work" <<'PY'
import json, sys
driver, model, count, work = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
base = json.load(open("tests/device/expect-p5.json"))
gpu = {"gpu_model": model, "gpu_count": count, "nvswitch": False, "fabric": "none", "fabric_interfaces": 0}
here = {**base, "driver": driver, "fabric_manager": driver, "scratch_mount": None, "instance_types": {"here": gpu}}
variants = {"here": gpu, "mig": {**gpu, "mig_devices": 1}, "nvswitch": {**gpu, "nvswitch": True}}
for name, inst in variants.items():
    json.dump({**here, "instance_types": {"here": inst}}, open(f"{work}/expect-{name}.json", "w"))
PY
run() {  # name, then the node check's arguments
  name=$1; shift
  python3 -m images.nodecheck "$@" --format text > "$OUT/$name.txt" 2>&1
  echo "$name exit $?" >> "$OUT/summary.txt"
}
run lock-p5 --expect tests/device/expect-p5.json --instance-type p5.48xlarge
run here --expect "$work"/expect-here.json --instance-type here
run mig-read --expect "$work"/expect-mig.json --instance-type here
run fabric-manager-process --expect "$work"/expect-nvswitch.json --instance-type here --fabric-manager process
run fabric-manager-service --expect "$work"/expect-nvswitch.json --instance-type here --fabric-manager service
run no-instance-type --expect "$work"/expect-here.json
run missing-expectation --expect /nonexistent.json
python3 - > "$OUT/probes.txt" 2>&1 <<'PY'
from dataclasses import asdict
from pathlib import Path
from images.nodecheck.cuda import probe_cuda
from images.nodecheck.gpus import read_gpus
from images.nodecheck.host import erdma_devices, nvswitch_devices, rdma_devices, rdma_driver, rdma_netdev_mtus
report = read_gpus()
print("nvml error:", report.error)
for i, name in enumerate(report.names):
    fabric = report.fabric.get(i)
    print(f"gpu {i} {name}: fabric {asdict(fabric) if fabric else None}; ecc {asdict(report.ecc[i])}")
print("cuda:", asdict(probe_cuda()))
print("nvswitches on the PCI bus:", nvswitch_devices(Path("/sys")))
devices = rdma_devices(Path("/sys"))
print("rdma drivers:", {d: rdma_driver(Path("/sys"), d) for d in devices})
print("erdma:", erdma_devices(Path("/sys"), devices), "mtus:", rdma_netdev_mtus(Path("/sys"), devices))
PY
nvidia-smi -q -d ECC,ROW_REMAPPER,FABRIC >> "$OUT/probes.txt" 2>&1
lspci -nn 2>/dev/null | grep -i nvidia >> "$OUT/probes.txt"
cat "$OUT/summary.txt" "$OUT/probes.txt"
