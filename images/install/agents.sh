#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Install the cloud's node agents at their pinned versions: on AWS the CloudWatch agent (GPU metrics, the
# bootstrap configures it) and the AWS CLI; on Alibaba Cloud the aliyun CLI (gpufleet-gpu-health publishes to
# CloudMonitor with it). The Lustre clients: lustre.sh.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

require GPUFLEET_CLOUD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

case "$GPUFLEET_CLOUD" in
    aws)
        require CLOUDWATCH_AGENT_VERSION CLOUDWATCH_AGENT_URL
        fetch "$CLOUDWATCH_AGENT_URL" "$work/amazon-cloudwatch-agent.deb" "${CLOUDWATCH_AGENT_SHA256:-}"
        apt_install "$work/amazon-cloudwatch-agent.deb"
        # The AWS CLI v2 the node scripts call (lifecycle actions, metrics, instance health), checked by its signature.
        require AWS_CLI_URL AWS_CLI_SIGNATURE_URL AWS_CLI_PGP_KEY_URL AWS_CLI_PGP_FINGERPRINT
        fetch_signed "$AWS_CLI_URL" "$work/awscliv2.zip" "$AWS_CLI_SIGNATURE_URL" "$AWS_CLI_PGP_KEY_URL" \
            "$AWS_CLI_PGP_FINGERPRINT"
        unzip_to "$work/awscliv2.zip" "$work"
        "$work/aws/install" --install-dir "${GPUFLEET_ROOT:-}/usr/local/aws-cli" \
            --bin-dir "${GPUFLEET_ROOT:-}/usr/local/bin"
        ;;
    alicloud)
        # The aliyun CLI: gpufleet-gpu-health publishes CloudMonitor custom metrics and sets ESS instance health.
        require ALIYUN_CLI_VERSION ALIYUN_CLI_URL
        fetch "$ALIYUN_CLI_URL" "$work/aliyun-cli.tgz" "${ALIYUN_CLI_SHA256:-}"
        mkdir -p "${GPUFLEET_ROOT:-}/usr/local/bin"
        tar -xzf "$work/aliyun-cli.tgz" -C "${GPUFLEET_ROOT:-}/usr/local/bin" aliyun
        ;;
    azure)
        # The Azure Managed Lustre client: lustre.sh.
        ;;
    *)
        die "GPUFLEET_CLOUD: unknown cloud '${GPUFLEET_CLOUD}' (aws, azure or alicloud)"
        ;;
esac
