# shellcheck shell=bash
# Azure's part of the Slurm head node and node scripts (slurm-head.sh, slurm-join.sh), sourced after common.sh: the
# munge key as a Key Vault secret, read and written with Key Vault's REST API (the image has no Azure CLI) under the
# machine's managed identity's token from the instance metadata service (IMDS), and the instance's facts from IMDS.
# The key is binary: the secret holds it base64 (a Key Vault secret is a string).
AZURE_IMDS=${GPUFLEET_AZURE_IMDS:-http://169.254.169.254}/metadata
# Key Vault's data plane: Get Secret (GET {vault}/secrets/{name}, 404 SecretNotFound while none is stored) and Set
# Secret (PUT {vault}/secrets/{name}, body {"value", "contentType"}), api-version 7.4 (learn.microsoft.com/rest/api/
# keyvault/secrets/get-secret/get-secret, set-secret/set-secret).
KEY_VAULT_API=7.4

azure_md() {  # path under /metadata/instance, as text
  curl -sf -H Metadata:true "$AZURE_IMDS/instance/$1?api-version=2021-02-01&format=text"
}

vault_token() {  # the identity's token for Key Vault (resource https://vault.azure.net)
  curl -sf -H Metadata:true \
    "$AZURE_IMDS/identity/oauth2/token?api-version=2018-02-01&resource=https%3A%2F%2Fvault.azure.net" |
    sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p'
}

munge_secret_url() {
  echo "https://$GPUFLEET_KEY_VAULT.vault.azure.net/secrets/$GPUFLEET_MUNGE_SECRET?api-version=$KEY_VAULT_API"
}

munge_secret_get() {  # prints the secret's value (the key, base64); fails while none is stored or unreachable
  local token
  token=$(vault_token) && [[ -n $token ]] &&
    curl -sf -H "Authorization: Bearer $token" "$(munge_secret_url)" |
    sed -n 's/.*"value":"\([^"]*\)".*/\1/p' | tr -d "\\\\"  # JSON may escape base64's "/" as "\/"
}

munge_key_stored() {  # true when the secret has a value; false also when Key Vault is unreachable
  [[ -n $(munge_secret_get) ]]
}

munge_key_read() {  # file to write the key to
  munge_secret_get | base64 -d >"$1"
  [[ -s $1 ]]
}

munge_key_store() {  # file holding the key
  local token
  token=$(vault_token) && [[ -n $token ]] || return 1
  curl -sf -X PUT -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    --data-binary @- "$(munge_secret_url)" >/dev/null \
    <<<"{\"value\":\"$(base64 -w0 "$1")\",\"contentType\":\"application/octet-stream;base64\"}"
}

# shellcheck disable=SC2034 # the facts the sourcing script reads
instance_facts() {  # sets INSTANCE_ID, INSTANCE_TYPE, ZONE and ADDRESS
  local name scale_set
  name=$(azure_md compute/name) &&
    scale_set=$(azure_md compute/vmScaleSetName) &&
    INSTANCE_TYPE=$(azure_md compute/vmSize) &&
    ZONE=$(azure_md compute/zone) &&
    ADDRESS=$(azure_md network/interface/0/ipv4/ipAddress/0/privateIpAddress) || return 1
  # What Delete Instances takes (components/clouds/azure/slurm_capacity.py): a Uniform set's VM is named
  # <scale set>_<instance id> and goes by the number; a Flexible set's VM goes by its name.
  if [[ ${GPUFLEET_SCALE_SET_MODE:-} == Uniform && $name == "${scale_set}_"* ]]; then
    INSTANCE_ID=${name##*_}
  else
    INSTANCE_ID=$name
  fi
}
