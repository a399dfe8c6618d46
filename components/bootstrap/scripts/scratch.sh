#!/bin/bash
# Stripe the instance's local NVMe disks into RAID0 (or use the single one),
# format XFS once and mount at the scratch mount. Runs at every boot: a disk
# that is in use, partitioned or not local storage is never touched.
set -euo pipefail
# shellcheck source=/dev/null
. "${GPUFLEET_LIB:-/usr/local/lib/gpufleet}/common.sh"
MOUNT=$GPUFLEET_SCRATCH_MOUNT
ARRAY=/dev/md/gpufleet-scratch

is_local_nvme() {  # name, model
  case "$GPUFLEET_CLOUD" in
    aws) [[ $2 == "Amazon EC2 NVMe Instance Storage" ]] ;;
    azure) [[ $2 == "Microsoft NVMe Direct Disk"* ]] ;;
    # Alibaba cloud disks on NVMe report this model; local disks are the other NVMe devices.
    alicloud) [[ $1 == nvme* && $2 != "Alibaba Cloud Elastic Block Storage" ]] ;;
    *) return 1 ;;
  esac
}

if mountpoint -q "$MOUNT"; then
  log "scratch already mounted at $MOUNT"
  exit 0
fi

devices=()
existing=""
pair='NAME="([^"]*)" TYPE="([^"]*)"'
while IFS= read -r line; do
  [[ $line =~ $pair\ MODEL=\"([^\"]*)\" ]] || continue
  name=${BASH_REMATCH[1]} type=${BASH_REMATCH[2]} model=${BASH_REMATCH[3]}
  model=${model%"${model##*[! ]}"}
  if [[ $type != disk ]] || ! is_local_nvme "$name" "$model"; then continue; fi
  in_use=0
  while IFS= read -r child; do
    [[ $child =~ $pair\ MOUNTPOINT=\"([^\"]*)\" ]] || continue
    if [[ ${BASH_REMATCH[2]} == part || -n ${BASH_REMATCH[3]} ]]; then in_use=1; fi
    if [[ ${BASH_REMATCH[2]} == raid0 ]]; then existing=/dev/${BASH_REMATCH[1]}; fi
  done < <(lsblk -n -P -o NAME,TYPE,MOUNTPOINT "/dev/$name")
  if ((in_use)); then
    log "skipping /dev/$name: partitioned or mounted"
    continue
  fi
  devices+=("/dev/$name")
done < <(lsblk -d -n -P -o NAME,TYPE,MODEL)

if ((${#devices[@]} == 0)); then
  log "no local NVMe disks; no scratch at $MOUNT"
  exit 0
fi

if ((${#devices[@]} == 1)); then
  target=${devices[0]}
elif [[ -n $existing ]]; then
  target=$existing
else
  target=$ARRAY
  # After a reboot the disks keep their superblocks: reassemble before creating.
  if ! mdadm --assemble "$ARRAY" "${devices[@]}"; then
    mdadm --create "$ARRAY" --run --level=0 --raid-devices="${#devices[@]}" \
      --name=gpufleet-scratch "${devices[@]}"
  fi
fi

if [[ $(blkid -o value -s TYPE "$target" || true) != xfs ]]; then
  mkfs.xfs -L gpufleet "$target"
fi
mkdir -p "$MOUNT"
mount -o noatime "$target" "$MOUNT"
log "scratch on $target (${#devices[@]} disks) mounted at $MOUNT"
