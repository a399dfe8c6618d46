"""The node security group: all traffic among the nodes (EFA needs it both ways), SSH only from admin CIDRs. On EKS
the control plane's network interfaces carry this group too (components/clouds/aws/eks.py), so the API server and
the kubelets reach each other through the same self rules."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from components.slurm.site import SLURMCTLD_PORT, SLURMD_PORT, SRUN_PORTS

ALL_PROTOCOLS = "-1"
OPEN_V4 = "0.0.0.0/0"


def node_security_group(
    name: str,
    vpc_id: pulumi.Input[str],
    admin_cidrs: list[str],
    tags: dict[str, str],
    opts: pulumi.ResourceOptions,
    lustre_sg_id: pulumi.Input[str] | None,
    slurm_head_sg_id: pulumi.Input[str] | None = None,
) -> aws.ec2.SecurityGroup:
    """EFA traffic is only allowed by a group that references itself for all protocols in and out
    (EC2 user guide, efa-start; ParallelCluster's EfaSecurityGroupValidator). lustre_sg_id: the shared
    file system's group, which the nodes reach on the Lustre ports. slurm_head_sg_id: the Slurm head node's group,
    whose slurmctld and srun the nodes reach and which reaches their slurmd (slurm_head.py)."""
    from .shared_storage import LUSTRE_PORTS

    lustre = [
        aws.ec2.SecurityGroupEgressArgs(protocol="tcp", from_port=low, to_port=high, security_groups=[lustre_sg_id],
                                        description="Lustre to the shared file system")
        for low, high in (LUSTRE_PORTS if lustre_sg_id is not None else ())
    ]
    ingress = [
        aws.ec2.SecurityGroupIngressArgs(
            protocol=ALL_PROTOCOLS, from_port=0, to_port=0, self=True, description="all traffic among nodes (EFA)"
        )
    ]
    # The file servers open connections to clients too (FSx for Lustre guide, "File system access control with
    # Amazon VPC": inbound 988 and 1018-1023 on the clients' group from the file system's).
    ingress += [
        aws.ec2.SecurityGroupIngressArgs(protocol="tcp", from_port=low, to_port=high, security_groups=[lustre_sg_id],
                                         description="Lustre from the shared file system")
        for low, high in (LUSTRE_PORTS if lustre_sg_id is not None else ())
    ]
    if slurm_head_sg_id is not None:
        ingress += node_ingress_from_head(slurm_head_sg_id)
    ingress += [
        aws.ec2.SecurityGroupIngressArgs(protocol="tcp", from_port=22, to_port=22, cidr_blocks=[cidr],
                                         description="SSH from an admin network")
        for cidr in admin_cidrs
    ]
    return aws.ec2.SecurityGroup(
        f"{name}-nodes",
        description="GPU nodes: all traffic among themselves, egress through NAT",
        vpc_id=vpc_id,
        ingress=ingress,
        egress=[
            aws.ec2.SecurityGroupEgressArgs(
                protocol=ALL_PROTOCOLS, from_port=0, to_port=0, self=True, description="all traffic among nodes (EFA)"
            ),
            aws.ec2.SecurityGroupEgressArgs(
                protocol="tcp", from_port=443, to_port=443, cidr_blocks=[OPEN_V4],
                description="HTTPS out through NAT (S3, ECR, package mirrors)",
            ),
            *lustre,
            *(node_egress_to_head(slurm_head_sg_id) if slurm_head_sg_id is not None else []),
        ],
        tags={**tags, "Name": f"{name}-nodes"},
        opts=opts,
    )



def node_ingress_from_head(head_sg_id: pulumi.Input[str]) -> list[aws.ec2.SecurityGroupIngressArgs]:
    """The nodes admit slurmd's port from the Slurm head node (slurmctld and srun reach slurmd)."""
    return [aws.ec2.SecurityGroupIngressArgs(protocol="tcp", from_port=SLURMD_PORT, to_port=SLURMD_PORT,
                                             security_groups=[head_sg_id],
                                             description="slurmd from the Slurm head node")]


def node_egress_to_head(head_sg_id: pulumi.Input[str]) -> list[aws.ec2.SecurityGroupEgressArgs]:
    """The nodes reach slurmctld and the ports of an srun on the Slurm head node."""
    low, high = SRUN_PORTS
    return [
        aws.ec2.SecurityGroupEgressArgs(protocol="tcp", from_port=SLURMCTLD_PORT, to_port=SLURMCTLD_PORT,
                                        security_groups=[head_sg_id], description="slurmctld on the Slurm head node"),
        aws.ec2.SecurityGroupEgressArgs(protocol="tcp", from_port=low, to_port=high, security_groups=[head_sg_id],
                                        description="srun on the Slurm head node"),
    ]
