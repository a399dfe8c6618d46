# shellcheck shell=bash
# Alibaba Cloud's calls from a machine, signed with its instance RAM role: the render puts this before the cloud part
# of each script that calls (gpu-health-alicloud.sh, slurm-alicloud.sh; cloud_init.cloud_part). The role's STS
# credentials are read here with a metadata token: the pinned aliyun CLI 3.0.174 fetches them itself without one in
# --mode EcsRamRole (alibaba-cloud-sdk-go v1.62.472 sdk/auth/signers/signer_ecs_ram_role.go:99-107, a plain GET),
# which hardened metadata refuses. --mode StsToken takes them from ALIBABACLOUD_ACCESS_KEY_ID / _ACCESS_KEY_SECRET /
# _SECURITY_TOKEN (aliyun-cli v3.0.174 config/profile.go:177-207, 319-323), kept out of argv, which every user can
# read; ALIBABACLOUD_IGNORE_PROFILE=TRUE skips any config file (config/configuration.go:119).

as_node() {
  local role creds id secret sts
  role=$(alicloud_meta ram/security-credentials/) &&
    creds=$(alicloud_meta "ram/security-credentials/$role") || return 1
  { read -r id && read -r secret && read -r sts; } < <(python3 -c '
import json, sys
c = json.load(sys.stdin)
if c.get("Code") == "Success":
    print(c["AccessKeyId"], c["AccessKeySecret"], c["SecurityToken"], sep="\n")
' <<<"$creds") || { log "no role credentials for $role"; return 1; }
  ALIBABACLOUD_IGNORE_PROFILE=TRUE ALIBABACLOUD_ACCESS_KEY_ID=$id ALIBABACLOUD_ACCESS_KEY_SECRET=$secret \
    ALIBABACLOUD_SECURITY_TOKEN=$sts aliyun --mode StsToken --region "$GPUFLEET_REGION" "$@"
}

