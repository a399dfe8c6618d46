"""What a node group's nodes carry in an EKS cluster: their kubelet's labels and taints, the Auto Scaling group tags
Cluster Autoscaler reads to scale the group from zero, and the owner tag EKS requires on self-managed nodes.

Labels: the stack's, the group's placement (gpufleet.io/group, gpufleet.io/fabric, gpufleet.io/placement-group where
the group has one), the GPU sharing labels the in-cluster device plugin reads (components/kubernetes/gpu_sharing.py),
and Cluster Autoscaler's GPU label. topology.kubernetes.io/zone is not among them: the kubelet and the cloud
controller set it from the cloud (Kubernetes "Well-Known Labels, Annotations and Taints", topology.kubernetes.io/zone).
Taints: the stack's, plus nvidia.com/gpu=present:NoSchedule, the taint NVIDIA's charts and the shared Kubernetes
policies tolerate on GPU nodes (components/kubernetes/placement.py GPU_TAINT_KEY, policies/kubernetes/tolerations.py).
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

import pulumi

from gpufleet.catalog import InstanceType
from gpufleet.clouds.aws.stack_model import AwsNodeGroupSettings

from ...bootstrap.added_files import gzip_user_data
from ...bootstrap.eks_join import EksNode, eks_user_data
from ...bootstrap.errors import BootstrapError
from .nodegroup_args import USER_DATA_REMEDY

if TYPE_CHECKING:
    from ...kubernetes.gpu_sharing import GroupSharing
    from .nodegroup_args import NodeGroupArgs

GROUP_LABEL = "gpufleet.io/group"
FABRIC_LABEL = "gpufleet.io/fabric"
PLACEMENT_GROUP_LABEL = "gpufleet.io/placement-group"
# Cluster Autoscaler's GPU label on AWS (kubernetes/autoscaler cluster-autoscaler/cloudprovider/aws/
# aws_cloud_provider.go GPULabel; README.md "Special note on GPU instances": set on the kubelet with --node-labels so
# the autoscaler waits for the device plugin instead of scaling out again). Not a kubernetes.io/k8s.io namespace, so
# NodeRestriction lets the kubelet set it.
ACCELERATOR_LABEL = "k8s.amazonaws.com/accelerator"
GPU_TAINT = ("nvidia.com/gpu", "present", "NoSchedule")
EFA_RESOURCE = "vpc.amazonaws.com/efa"
# "Amazon EC2 instances with the EFA driver installed pre-allocate 5128 2MiB Huge Pages, which you can request as
# resources" (EKS user guide ml/node-efa.adoc@4d52b4d line 55): the kubelet advertises them, and NCCL jobs request
# hugepages-2Mi (examples/kubernetes/aws): the template of a group at zero must carry them or no pod fits it.
EFA_HUGEPAGES = ("hugepages-2Mi", f"{5128 * 2}Mi")
# kubernetes/autoscaler cluster-autoscaler/cloudprovider/aws/README.md ("Auto-Discovery Setup", scale from 0 nodes)
# and aws_manager.go (extractLabelsFromAsg, extractTaintsFromAsg, extractAllocatableResourcesFromAsg read these
# prefixes from the group's own tags).
TEMPLATE = "k8s.io/cluster-autoscaler/node-template"
ENABLED_TAG = "k8s.io/cluster-autoscaler/enabled"
# ASG tag keys are at most 128 characters (Amazon EC2 Auto Scaling API reference, Tag: Key), and an AWS resource holds
# at most 50 user tags (Tagging AWS Resources user guide, "Tag naming limits and requirements"; that the Auto Scaling
# user guide repeats it for groups was not confirmed from its page).
TAG_KEY_MAX = 128
TAGS_PER_GROUP = 50
# IMDSv2 hop limits. A VM node keeps 2, so containers in their own network namespace reach IMDSv2. An EKS node gets
# 1: a pod in its own network namespace then gets no IMDSv2 token, so it cannot take the node role's credentials
# (EKS user guide, best-practices-security: "Block access to IMDSv1 from the node and all containers and block access
# to IMDSv2 for all containers that don't use host networking"; EKS multi-tenant whitepaper, "Restrict the use of
# host networking and block access to instance metadata service": with hop count 1 IMDS rejects pods "provided
# those pods do not use host networking"). What in-cluster reads IMDS still reaches it: hostNetwork pods share the
# node's namespace (the termination handler, manifests/aws-node-termination-handler.yaml `hostNetwork: true`; the
# VPC CNI and Pod Identity agent add-ons; the EFA plugin); the autoscaler takes its Region from AWS_REGION
# (cluster-autoscaler-1.35.2 cloudprovider/aws/aws_util.go:107-108, aws_sdk_provider.go:248) and its credentials
# from Pod Identity (pod_identity.py); the node check and the join run on the host.
VM_METADATA_HOP_LIMIT = 2
EKS_METADATA_HOP_LIMIT = 1


def _sharing(group: AwsNodeGroupSettings, types: list[InstanceType]) -> GroupSharing:
    from ...kubernetes.gpu_sharing import GroupSharing  # the Kubernetes package loads only for a Kubernetes cluster

    sharing = group.gpu_sharing
    return GroupSharing(group.name, tuple(t.name for t in types), types[0].gpu.count, sharing.mode, sharing.mig_profile,
                        sharing.replicas)


def fabric(types: list[InstanceType], rdma: bool) -> str:
    """The fabric the group's nodes use: the primary type's (efa) where RDMA is wired, else none."""
    return types[0].fabric.kind if rdma and types[0].rdma else "none"


def accelerator(types: list[InstanceType]) -> str:
    """nvidia-<model> of the primary type, as a label value (the README's example: nvidia-tesla-k80)."""
    return "nvidia-" + re.sub(r"[^a-z0-9.-]+", "-", types[0].gpu.model.lower()).strip("-")


def node_labels(group: AwsNodeGroupSettings, types: list[InstanceType], rdma: bool,
                placement_group: str | None) -> dict[str, str]:
    """Every label the group's kubelets register with: the stack's and gpufleet's (a stack label with one of
    gpufleet's keys is refused: BootstrapError naming the field)."""
    # Here, not at the top: the Kubernetes package loads pulumi_kubernetes, which a VM cluster's plan never needs.
    from ...kubernetes.gpu_sharing import sharing_labels

    labels = {
        GROUP_LABEL: group.name,
        FABRIC_LABEL: fabric(types, rdma),
        ACCELERATOR_LABEL: accelerator(types),
        **sharing_labels(_sharing(group, types)),
    }
    if placement_group:
        labels[PLACEMENT_GROUP_LABEL] = placement_group
    clash = sorted(set(labels) & set(group.labels))
    if clash:
        raise BootstrapError(f"node_groups[{group.name}].labels: {', '.join(clash)} are set by gpufleet; remove them")
    return {**group.labels, **labels}


def node_taints(group: AwsNodeGroupSettings) -> tuple[tuple[str, str, str], ...]:
    """The stack's taints, then the GPU taint unless the stack taints nvidia.com/gpu itself."""
    taints = tuple((t.key, t.value, t.effect) for t in group.taints)
    if any(key == GPU_TAINT[0] for key, _, _ in taints):
        return taints
    return (*taints, GPU_TAINT)


def node_resources(group: AwsNodeGroupSettings, types: list[InstanceType], rdma: bool) -> dict[str, str]:
    """What one node advertises beyond CPU and memory: GPUs as the device plugin shares them, and on EFA nodes their
    EFA devices (the EFA device plugin advertises one vpc.amazonaws.com/efa per EFA interface) and the huge pages the
    EFA driver preallocates."""
    from ...kubernetes.gpu_sharing import advertised_resources

    resources = {name: str(count) for name, count in advertised_resources(_sharing(group, types)).items()}
    if fabric(types, rdma) == "efa":
        resources[EFA_RESOURCE] = str(types[0].fabric.interfaces)
        resources[EFA_HUGEPAGES[0]] = EFA_HUGEPAGES[1]
    return resources


def template_tags(labels: Mapping[str, pulumi.Input[str]], taints: tuple[tuple[str, str, str], ...],
                  resources: Mapping[str, str]) -> dict[str, pulumi.Input[str]]:
    """The node template Cluster Autoscaler builds for a group at zero: its labels, taints and resources."""
    tags: dict[str, pulumi.Input[str]] = {f"{TEMPLATE}/label/{key}": value for key, value in sorted(labels.items())}
    tags.update({f"{TEMPLATE}/taint/{key}": f"{value}:{effect}" for key, value, effect in taints})
    tags.update({f"{TEMPLATE}/resources/{name}": count for name, count in sorted(resources.items())})
    long = sorted(key for key in tags if len(key) > TAG_KEY_MAX)
    if long:
        raise BootstrapError(f"labels and taints: Auto Scaling group tag keys over {TAG_KEY_MAX} characters: "
                             f"{', '.join(long)}; shorten the label or taint key")
    return tags


def discovery_tags(cluster_name: pulumi.Input[str]) -> list[tuple[pulumi.Input[str], str]]:
    """(key, value) of the discovery tags: enabled, and <cluster>=owned. The autoscaler runs with --nodes per group
    (components/kubernetes/autoscaler.py) and needs neither to find the groups; they let its role's resize actions be
    conditioned on the cluster's tag (aws:ResourceTag/k8s.io/cluster-autoscaler/<cluster>), and auto-discovery
    (`asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/<cluster-name>`) find the same groups."""
    key = pulumi.Output.from_input(cluster_name).apply(lambda name: f"k8s.io/cluster-autoscaler/{name}")
    return [(ENABLED_TAG, "true"), (key, "owned")]


def owner_tag(cluster_name: pulumi.Input[str]) -> pulumi.Output[str]:
    """The key of the tag (value owned) EKS requires on every self-managed node (EKS user guide nodes/worker.adoc,
    "add the following tag to each node": kubernetes.io/cluster/<cluster>=owned; troubleshooting.adoc: nodes that
    are not tagged as owned by the cluster do not join)."""
    return pulumi.Output.from_input(cluster_name).apply(lambda name: f"kubernetes.io/cluster/{name}")


# Values of the longest plausible shape, to render an EKS group's user data once before any resource exists: a
# group over the cap, or with a label its kubelet may not set, is refused as bad input (exit 2), not mid-deploy.
# EKS cluster names are at most 100 characters (EKS API reference, CreateCluster: name); an endpoint is
# https://<32 hex>.<suffix>.<region>.eks.amazonaws.com; a cluster CA (an RSA 2048 certificate) is about 1.5 KB in
# base64: 2 KB of incompressible base64 stands for it.
LONGEST_CLUSTER = "c" * 100
LONGEST_CA = base64.b64encode(b"".join(hashlib.sha256(bytes([i])).digest() for i in range(48))).decode()[:2048]


LONGEST_ENDPOINT = f"https://{'F' * 32}.gr7.ap-southeast-5.eks.amazonaws.com"


def _node(args: NodeGroupArgs, cluster: str, endpoint: str, ca: str, cidr: str, placement: str) -> EksNode:
    labels = node_labels(args.group, args.types, args.rdma, placement or None)
    try:
        return EksNode(cluster, endpoint, ca, cidr, labels, node_taints(args.group),
                       efa=fabric(args.types, args.rdma) == "efa")
    except BootstrapError as error:
        raise BootstrapError(f"node_groups[{args.group.name}].{error}") from None


def launch_user_data(args: NodeGroupArgs, placement_group: pulumi.Output[str] | None,
                     placement_logical_name: str | None = None) -> pulumi.Output[str]:
    """The launch template's user data, gzipped and base64 (EC2's 16 KiB cap applies to what is sent): the group's
    cloud-config, and on an EKS group the join after the node check (components/bootstrap/eks_join.py), once the
    cluster's values are known.
    placement_logical_name: the placement group's Pulumi name, which its auto-name extends by "-" and 7 characters
    (a label value holds at most 63)."""
    eks = args.eks
    name = args.group.name
    if eks is None:
        def encode(text: str) -> str:
            return base64.b64encode(gzip_user_data(text, "aws", f"node group {name}", USER_DATA_REMEDY)).decode()

        return pulumi.Output.from_input(args.user_data).apply(encode)
    if isinstance(args.user_data, str):
        placement = f"{placement_logical_name}-{'0' * 7}" if placement_logical_name else ""
        longest = _node(args, LONGEST_CLUSTER, LONGEST_ENDPOINT, LONGEST_CA, "172.20.0.0/16", placement)
        eks_user_data(args.user_data, longest, name)

    def render(values: list[str]) -> str:
        text, cluster, endpoint, ca, cidr, placement = values
        return base64.b64encode(eks_user_data(text, _node(args, cluster, endpoint, ca, cidr, placement), name)).decode()

    return pulumi.Output.all(args.user_data, eks.cluster_name, eks.endpoint, eks.certificate_authority,
                             eks.service_cidr, placement_group or "").apply(render)


def metadata_hop_limit(args: NodeGroupArgs) -> int:
    """The launch template's IMDSv2 response hop limit: 1 on an EKS group (pods off the node role), else 2."""
    return VM_METADATA_HOP_LIMIT if args.eks is None else EKS_METADATA_HOP_LIMIT


def instance_tags(args: NodeGroupArgs, kind: str) -> pulumi.Input[dict[str, str]]:
    """The tags of launched instances, volumes and interfaces; EKS instances add kubernetes.io/cluster/<name>."""
    if args.eks is None or kind != "instance":
        return args.tags
    return owner_tag(args.eks.cluster_name).apply(lambda key: {**args.tags, key: "owned"})


def group_tags(args: NodeGroupArgs, placement_group: pulumi.Output[str] | None
               ) -> list[tuple[pulumi.Input[str], pulumi.Input[str]]]:
    """The Auto Scaling group's own tags (not propagated: the launch template tags the instances); on an EKS group
    also the autoscaler's discovery tags and the node template it scales the group from zero with."""
    tags: list[tuple[pulumi.Input[str], pulumi.Input[str]]] = list(args.tags.items())
    if args.eks is None:
        return tags
    from ...kubernetes.termination_handler import LIFECYCLE_LABEL

    labels: dict[str, pulumi.Input[str]] = dict(node_labels(args.group, args.types, args.rdma, None))
    if placement_group is not None:
        labels[PLACEMENT_GROUP_LABEL] = placement_group
    if args.group.capacity == "spot":
        # The join adds what IMDS says of the instance (eks-join.sh); every instance of a spot group is spot, and the
        # termination handler selects on it. A mixed group's template cannot say which kind the next node is.
        labels[LIFECYCLE_LABEL] = "spot"
    resources = node_resources(args.group, args.types, args.rdma)
    tags += discovery_tags(args.eks.cluster_name)
    tags += template_tags(labels, node_taints(args.group), resources).items()
    if len(tags) > TAGS_PER_GROUP:
        raise BootstrapError(f"node_groups[{args.group.name}].labels: the Auto Scaling group would carry {len(tags)} "
                             f"tags (the autoscaler's node template has one per label, taint and resource), over "
                             f"the {TAGS_PER_GROUP} a group holds; use fewer labels or taints")
    return tags
