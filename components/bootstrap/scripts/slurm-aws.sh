# shellcheck shell=bash
# AWS's part of the Slurm head node and node scripts (slurm-head.sh, slurm-join.sh), sourced after common.sh: the munge
# key in Secrets Manager through the image's AWS CLI v2, the instance's facts from IMDSv2. The key is binary
# (SecretBinary): the CLI prints it base64 (`--output text`) and takes it from a file (`fileb://`).

munge_key_stored() {  # true when the secret has a value (a version); false also when Secrets Manager is unreachable
  local versions
  # shellcheck disable=SC2016 # a JMESPath literal, not a shell expansion
  versions=$(aws secretsmanager describe-secret --region "$GPUFLEET_SLURM_REGION" \
    --secret-id "$GPUFLEET_MUNGE_SECRET" --query 'length(keys(VersionIdsToStages || `{}`))' --output text) &&
    [[ $versions =~ ^[1-9][0-9]*$ ]]
}

munge_key_read() {  # file to write the key to
  aws secretsmanager get-secret-value --region "$GPUFLEET_SLURM_REGION" --secret-id "$GPUFLEET_MUNGE_SECRET" \
    --query SecretBinary --output text | base64 -d >"$1"
  [[ -s $1 ]]
}

munge_key_store() {  # file holding the key
  aws secretsmanager put-secret-value --region "$GPUFLEET_SLURM_REGION" --secret-id "$GPUFLEET_MUNGE_SECRET" \
    --secret-binary "fileb://$1" >/dev/null
}

# shellcheck disable=SC2034 # the facts the sourcing script reads
instance_facts() {  # sets INSTANCE_ID, INSTANCE_TYPE, ZONE and ADDRESS
  local token
  token=$(imds_token) &&
    INSTANCE_ID=$(imds_get "$token" instance-id) &&
    INSTANCE_TYPE=$(imds_get "$token" instance-type) &&
    ZONE=$(imds_get "$token" placement/availability-zone) &&
    ADDRESS=$(imds_get "$token" local-ipv4)
}
