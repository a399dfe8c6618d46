"""The node security group: all traffic among the nodes (EFA needs it both ways), SSH only from admin CIDRs; on EKS
the rules between it and the cluster security group."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

ALL_PROTOCOLS = "-1"
OPEN_V4 = "0.0.0.0/0"


def node_security_group(
    name: str,
    vpc_id: pulumi.Input[str],
    admin_cidrs: list[str],
    tags: dict[str, str],
    opts: pulumi.ResourceOptions,
    lustre_sg_id: pulumi.Input[str] | None,
    eks_cluster_sg_id: pulumi.Input[str] | None = None,
) -> aws.ec2.SecurityGroup:
    """EFA traffic is only allowed by a group that references itself for all protocols in and out
    (EC2 user guide, efa-start; ParallelCluster's EfaSecurityGroupValidator). lustre_sg_id: the shared
    file system's group, which the nodes reach on the Lustre ports. eks_cluster_sg_id: the EKS cluster security
    group the control plane reaches the nodes from (eks_node_ingress); inline like every rule of this group, as
    separate rule resources beside inline ones are overwritten by the group's next update."""
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
    if eks_cluster_sg_id is not None:
        ingress += eks_node_ingress(eks_cluster_sg_id)
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
        ],
        tags={**tags, "Name": f"{name}-nodes"},
        opts=opts,
    )


# Control plane <-> nodes on EKS (EKS user guide networking/sec-group-reqs.adoc@4d52b4d, "Restricting cluster
# traffic": TCP 443 and 10250 between the cluster security group and the nodes). The nodes keep their own group and
# its narrow egress rather than joining the cluster security group, whose default outbound rule is all traffic to
# 0.0.0.0/0 ("Default cluster security group"): the cluster group admits the nodes on 443 (their kubelets and pods
# reach the API server), and the node group admits the control plane on 10250 (logs, exec, metrics through the
# kubelet) and 443 (webhooks and API services served by pods). Node to API server needs no egress rule of its own:
# the node group's egress to 0.0.0.0/0 on 443 covers the cluster's interfaces. EFA's all-traffic self rule stays.
EKS_NODE_PORTS = {10250: "kubelet API from the EKS control plane", 443: "webhooks on pods from the EKS control plane"}


def eks_node_ingress(cluster_sg_id: pulumi.Input[str]) -> list[aws.ec2.SecurityGroupIngressArgs]:
    """The node group's inline rules admitting the EKS control plane."""
    return [
        aws.ec2.SecurityGroupIngressArgs(protocol="tcp", from_port=port, to_port=port,
                                         security_groups=[cluster_sg_id], description=description)
        for port, description in EKS_NODE_PORTS.items()
    ]


def eks_control_plane_access(
    name: str,
    node_sg_id: pulumi.Input[str],
    cluster_sg_id: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
    brought_node_group: bool = False,
) -> list[pulumi.Resource]:
    """The cluster security group admits the nodes on 443 (a rule of its own: EKS owns that group). A brought node
    group (network.security_group_id) gets the control plane's ingress as rules of their own too; a created one has
    them inline (node_security_group's eks_cluster_sg_id)."""
    rules: list[pulumi.Resource] = [aws.vpc.SecurityGroupIngressRule(
        f"{name}-eks-api-from-nodes",
        security_group_id=cluster_sg_id,
        referenced_security_group_id=node_sg_id,
        ip_protocol="tcp",
        from_port=443,
        to_port=443,
        description="EKS API server from the GPU nodes",
        opts=opts,
    )]
    if brought_node_group:
        rules += [
            aws.vpc.SecurityGroupIngressRule(
                f"{name}-eks-nodes-{port}",
                security_group_id=node_sg_id,
                referenced_security_group_id=cluster_sg_id,
                ip_protocol="tcp",
                from_port=port,
                to_port=port,
                description=description,
                opts=opts,
            )
            for port, description in EKS_NODE_PORTS.items()
        ]
    return rules
