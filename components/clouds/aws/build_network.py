"""Where an image bake runs without the default VPC (which many accounts delete): a small created network, one
private subnet whose only way out is a NAT gateway, the SSM endpoints and S3 gateway of AwsNetwork, a flow log and
a closed default security group as every created VPC; and a build security group that admits nothing inbound."""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network

import pulumi
import pulumi_aws as aws

from .flow_logs import vpc_flow_log
from .network import AwsNetwork, AwsNetworkArgs

# What the bake downloads: Ubuntu's archive (Canonical's EC2 images point apt at http://REGION.ec2.archive.ubuntu.com
# and http://security.ubuntu.com: port 80), NVIDIA's CUDA repository, the EFA installer, the CloudWatch agent, the
# FSx Lustre repository and the AWS CLI (HTTPS, images/lock.yaml sources), and Image Builder's own traffic: SSM
# (endpoints in the subnet), S3 (gateway) and Image Builder (HTTPS). Instance metadata, the Amazon DNS server and
# time sync are link-local or the VPC resolver, which security groups do not filter.
BUILD_EGRESS_PORTS = (80, 443)


@dataclass(frozen=True)
class BuildNetworkArgs:
    """Inputs of build_network."""

    region: str
    """The build region."""
    cidr: IPv4Network
    """The build VPC's CIDR."""
    zone: str
    """Zone of the private build subnet."""
    log_group_name: str
    """The flow log's log group, named before the key that admits it exists."""
    log_retention_days: int
    """Days the flow log's group keeps events (the image stack's network.log_retention_days)."""
    key_arn: pulumi.Input[str] | None
    """Key of the log group (a created image key, whose policy admits the group); None: CloudWatch Logs' own."""
    tags: dict[str, str]
    """Tags for every resource."""


def build_network(
    name: str, args: BuildNetworkArgs, parent: pulumi.Resource
) -> tuple[pulumi.Output[str], pulumi.Output[str]]:
    """The private build subnet and the build security group, created with the network they need."""
    child = pulumi.ResourceOptions(parent=parent)
    network_args = AwsNetworkArgs(region=args.region, zones=[args.zone], tags=args.tags, cidr=args.cidr)
    network = AwsNetwork(f"{name}-build", network_args, opts=child)
    log_group = aws.cloudwatch.LogGroup(
        f"{name}-build-logs",
        name=args.log_group_name,
        retention_in_days=args.log_retention_days,
        kms_key_id=args.key_arn,
        tags=args.tags,
        opts=child,
    )
    account = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=parent)).account_id
    vpc_flow_log(f"{name}-build", network.vpc_id, log_group, account, args.region, None, args.tags, child)
    group = aws.ec2.SecurityGroup(
        f"{name}-build",
        description="gpufleet image build instance: nothing inbound, HTTP and HTTPS out",
        vpc_id=network.vpc_id,
        ingress=[],
        egress=[
            aws.ec2.SecurityGroupEgressArgs(
                protocol="tcp", from_port=port, to_port=port, cidr_blocks=["0.0.0.0/0"],
                description=f"TCP {port} out: packages, NVIDIA's repository, SSM, S3 and Image Builder",
            )
            for port in BUILD_EGRESS_PORTS
        ],
        tags={**args.tags, "Name": f"{name}-build"},
        opts=child,
    )
    return network.subnet_ids[args.zone], group.id
