"""The shared dataset file system: FSx for Lustre (PERSISTENT_2 on SSD, the deployment type that takes a
customer key) in the cluster's first subnet, encrypted with the stack key, behind a security group that
admits Lustre traffic (TCP 988 and 1018-1023) only from the node security group and from itself.

The node group's launch templates mount it (components.bootstrap.operations.lustre_fstab_entry); the image
carries the Lustre client (images/install/lustre.sh).
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from gpufleet.stackfile.models import SharedStorage

# FSx for Lustre user guide, "File system access control with Amazon VPC": LNET on 988, and 1018-1023.
LUSTRE_PORTS = ((988, 988), (1018, 1023))
DEPLOYMENT_TYPE = "PERSISTENT_2"
LUSTRE_VERSION = "2.15"
LOWEST_THROUGHPUT = 125  # MB/s/TiB, PERSISTENT_2 SSD's lowest tier


def lustre_security_group(
    name: str, vpc_id: pulumi.Input[str], tags: dict[str, str], opts: pulumi.ResourceOptions
) -> aws.ec2.SecurityGroup:
    """The file system's group, without inline rules: its rules are the separate resources of
    lustre_access (inline and separate rules on one group would undo each other)."""
    return aws.ec2.SecurityGroup(
        f"{name}-lustre",
        description="FSx for Lustre: Lustre traffic from the GPU nodes and among the file servers only",
        vpc_id=vpc_id,
        tags={**tags, "Name": f"{name}-lustre"},
        opts=opts,
    )


def lustre_access(
    name: str, lustre_sg_id: pulumi.Input[str], node_sg_id: pulumi.Input[str], opts: pulumi.ResourceOptions
) -> list[pulumi.Resource]:
    """Ingress from the nodes and from the file servers themselves; egress back to both. Returns the rules, which
    CreateFileSystem validates (the file system must wait for them: FSx for Lustre guide, troubleshooting,
    "Creating an FSx for Lustre file system fails": port 988)."""
    peers = {"nodes": node_sg_id, "self": lustre_sg_id}
    rules: list[pulumi.Resource] = []
    for peer, peer_id in peers.items():
        for low, high in LUSTRE_PORTS:
            suffix = f"{peer}-{low}" if low == high else f"{peer}-{low}-{high}"
            rules.append(aws.vpc.SecurityGroupIngressRule(
                f"{name}-lustre-in-{suffix}",
                security_group_id=lustre_sg_id,
                referenced_security_group_id=peer_id,
                ip_protocol="tcp",
                from_port=low,
                to_port=high,
                description=f"Lustre from the {peer}",
                opts=opts,
            ))
            rules.append(aws.vpc.SecurityGroupEgressRule(
                f"{name}-lustre-out-{suffix}",
                security_group_id=lustre_sg_id,
                referenced_security_group_id=peer_id,
                ip_protocol="tcp",
                from_port=low,
                to_port=high,
                description=f"Lustre to the {peer}",
                opts=opts,
            ))
    return rules


def lustre_file_system(
    name: str, shared: SharedStorage, capacity_gib: int, subnet_id: pulumi.Input[str], lustre_sg_id: pulumi.Input[str],
    key_arn: pulumi.Input[str], protect: bool, tags: dict[str, str], opts: pulumi.ResourceOptions,
    rules: list[pulumi.Resource],
) -> aws.fsx.LustreFileSystem:
    return aws.fsx.LustreFileSystem(
        f"{name}-shared",
        deployment_type=DEPLOYMENT_TYPE,
        storage_type="SSD",
        storage_capacity=capacity_gib,
        per_unit_storage_throughput=shared.throughput_mb_per_tib or LOWEST_THROUGHPUT,
        file_system_type_version=LUSTRE_VERSION,
        # The provider takes one subnet: the file servers live in its zone.
        subnet_ids=subnet_id,
        security_group_ids=[lustre_sg_id],
        kms_key_id=key_arn,
        data_compression_type="LZ4",
        tags={**tags, "Name": f"{name}-shared"},
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(protect=protect, depends_on=rules)),
    )
