# shellcheck shell=bash
# Alibaba Cloud's part of the Slurm head node and node scripts (slurm-head.sh, slurm-join.sh), sourced after
# common.sh: the munge key in an OOS secret parameter (encrypted with the stack's KMS key) through the image's aliyun
# CLI signed with the instance RAM role's STS token (common.sh as_node, metadata in hardened mode), and the
# instance's facts from the metadata service. Until the head node stores the key the parameter holds
# GPUFLEET_MUNGE_UNSET (Pulumi creates it so; components/clouds/alicloud/slurm_head.py). The key is binary: the
# parameter holds it base64 (1368 characters of OOS's 4096).
# OOS API reference: GetSecretParameter (Name, WithDecryption: "only when true does Value have a result"; the answer
# {"Parameter": {"Value": ...}}) and UpdateSecretParameter (Name, Value).

munge_secret_get() {  # prints the stored key (base64); empty while the stand-in is; fails when OOS is unreachable
  as_node oos GetSecretParameter --Name "$GPUFLEET_MUNGE_SECRET" --WithDecryption true |
    GPUFLEET_MUNGE_UNSET=$GPUFLEET_MUNGE_UNSET python3 -c '
import json, os, sys
value = json.load(sys.stdin)["Parameter"]["Value"]
print("" if value == os.environ["GPUFLEET_MUNGE_UNSET"] else value)
'
}

munge_key_stored() {  # true when the parameter holds a key; false also when OOS is unreachable
  local value
  value=$(munge_secret_get) && [[ -n $value ]]
}

munge_key_read() {  # file to write the key to
  munge_secret_get | base64 -d >"$1"
  [[ -s $1 ]]
}

# The key is in this command's argv while it runs: only at the head node's first boot, before slurmctld starts and
# before anyone logs in (the CLI takes a parameter's value only as an argument).
munge_key_store() {  # file holding the key
  as_node oos UpdateSecretParameter --Name "$GPUFLEET_MUNGE_SECRET" --Value "$(base64 -w0 "$1")" >/dev/null
}

# shellcheck disable=SC2034 # the facts the sourcing script reads
instance_facts() {  # sets INSTANCE_ID, INSTANCE_TYPE, ZONE and ADDRESS (ECS user guide, instance metadata items)
  INSTANCE_ID=$(alicloud_meta instance-id) &&
    INSTANCE_TYPE=$(alicloud_meta instance/instance-type) &&
    ZONE=$(alicloud_meta zone-id) &&
    ADDRESS=$(alicloud_meta private-ipv4)
}
