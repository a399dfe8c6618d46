"""The AWS GPU cluster: a list of steps (network, key, logs, identity, Kubernetes control plane, interruption events,
alarm target, budget, shared storage, node groups, in-cluster layer), each a `create_*` function below whose resources
are children of the cluster. The Kubernetes steps (eks_steps.py) run only with `scheduler: kubernetes`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pulumi
import pulumi_aws as aws

from gpufleet.clouds.backend import ResolvedCluster, ResolvedGroup
from gpufleet.lock.status import image_tags
from gpufleet.stackfile.models import ClusterSpec

from ...bootstrap.operations import SharedMount
from ..scope import ClusterScope
from .alarms import TOPIC_PUBLISHERS, alarm_topic, group_alarms, idle_scale_down
from .budget import cost_budget
from .cluster_parts import AlarmTarget, ClusterKey, ClusterNetwork, NodeIdentity, SharedFileSystem, SlurmHead
from .cluster_user_data import group_user_data
from .eks import eks_cluster_name, eks_log_groups
from .flow_logs import vpc_flow_log
from .identity import AwsNodeIdentity, NodeIdentityArgs
from .interruptions import interruption_readers, interruption_topic
from .key_policy import AUTOSCALING, LogGroupGrant, cluster_roles, managed_node_roles, role_suffix
from .lifecycle import group_hooks
from .network import AwsNetwork, AwsNetworkArgs
from .nodegroup import AwsNodeGroup
from .nodegroup_args import NodeGroupArgs
from .security import node_security_group
from .shared_storage import lustre_access, lustre_file_system, lustre_security_group
from .slurm_head import head_security_group, munge_secret, slurm_head
from .storage import cluster_key

if TYPE_CHECKING:
    from .eks_steps import EksCluster


class AwsGpuCluster(pulumi.ComponentResource):
    """A GPU cluster in one region from a validated ClusterSpec and a locked image profile."""

    group_names: dict[str, pulumi.Output[str]]
    """Per node group: the Auto Scaling group name, or the EC2 Fleet id."""
    placement_groups: dict[str, pulumi.Output[str]]
    """Per RDMA node group: its cluster placement group."""
    security_group_id: pulumi.Output[str]
    """The node security group."""
    role_arn: pulumi.Output[str] | None
    """The node role; None when the stack brings its instance profile."""
    instance_profile_arn: pulumi.Output[str]
    """The nodes' instance profile, created or brought."""
    key_arn: pulumi.Output[str]
    """The KMS key of volumes, logs and the interruption topic, created or brought."""
    subnet_ids: dict[str, pulumi.Output[str]]
    """Private subnet per zone."""
    vpc_id: pulumi.Output[str]
    """The VPC, created or brought."""
    interruption_topic_arn: pulumi.Output[str] | None
    """SNS topic of spot interruption and rebalance events; None without spot groups or alarm emails to read it."""
    alarm_topic_arn: pulumi.Output[str] | None
    """The topic alarms and the budget notify (created or brought); None without alarms or budget alerts."""
    shared_file_system_id: pulumi.Output[str] | None
    """The FSx for Lustre file system; None without storage.shared."""

    def __init__(self, resolved: ResolvedCluster, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:Cluster", resolved.spec.name, None, opts)
        scope = ClusterScope.of(resolved, self)
        refuse_unpinned_versions(scope)
        account = aws.get_caller_identity_output(opts=scope.invoke()).account_id
        network = create_network(scope)
        key = create_key(scope)
        log_group = create_logs(scope, network, key.arn, account)
        munge = munge_secret(scope, key.arn) if scope.spec.scheduler.kind == "slurm" else None
        identity = create_identity(scope, log_group, account, munge, key.arn)
        head = slurm_head(scope, network.subnet_ids, network.slurm_head_security_group, network.security_group_id,
                          key.arn, munge, account) if munge and network.slurm_head_security_group else None
        kubernetes = create_kubernetes(scope, network, key.arn, identity, account)
        interruption_topic_arn = create_interruption_events(scope, key.arn)
        alarm_target = create_alarm_target(scope, key.arn, account)
        create_budget(scope, alarm_target)
        alarm_arn = alarm_target.arn if alarm_target else None
        shared = create_shared_storage(scope, network, key.arn)
        groups = create_groups(scope, network, key, identity, alarm_arn, shared, kubernetes, head)
        create_in_cluster(scope, kubernetes, groups)

        self.group_names = {n: g.group_name for n, g in groups.items()}
        self.placement_groups = {n: g.placement_group for n, g in groups.items() if g.placement_group}
        self.security_group_id = network.security_group_id
        self.role_arn = identity.role_arn
        self.instance_profile_arn = identity.instance_profile_arn
        self.key_arn = key.arn
        self.subnet_ids = network.subnet_ids
        self.vpc_id = network.vpc_id
        self.interruption_topic_arn = interruption_topic_arn
        self.alarm_topic_arn = alarm_arn
        self.shared_file_system_id = shared.file_system_id if shared else None
        # scheduler kubernetes: the EKS cluster's name, endpoint and kubeconfig command (outputs a VM stack lacks, so
        # not among the typed ones above).
        self.kubernetes_outputs: dict[str, object] = kubernetes.exports() if kubernetes else {}
        self.register_outputs(self.exports())

    def exports(self) -> dict[str, object]:
        """The stack outputs, by name: what callers and `pulumi stack output` read."""
        return {
            "group_names": self.group_names,
            "placement_groups": self.placement_groups,
            "security_group_id": self.security_group_id,
            "role_arn": self.role_arn,
            "instance_profile_arn": self.instance_profile_arn,
            "key_arn": self.key_arn,
            "subnet_ids": self.subnet_ids,
            "vpc_id": self.vpc_id,
            "interruption_topic_arn": self.interruption_topic_arn,
            "alarm_topic_arn": self.alarm_topic_arn,
            "shared_file_system_id": self.shared_file_system_id,
            **self.kubernetes_outputs,
        }


def _log_group_name(spec: ClusterSpec) -> str:
    return f"/gpufleet/{spec.name}/{spec.environment}"


def refuse_unpinned_versions(scope: ClusterScope) -> None:
    """scheduler kubernetes: a real run stops before any resource while an add-on or in-cluster image is unpinned."""
    if scope.spec.scheduler.kind == "kubernetes":
        from .eks_steps import refuse_unpinned_kubernetes  # the in-cluster layer loads only for Kubernetes

        refuse_unpinned_kubernetes(scope)


def create_network(scope: ClusterScope) -> ClusterNetwork:
    """The VPC and subnets (created or brought), the node security group and, with storage.shared, the file
    system's group the node group admits."""
    spec, name, tags, child = scope.spec, scope.name, scope.tags, scope.child
    network = AwsNetwork(
        f"{name}-net",
        AwsNetworkArgs(
            region=spec.region,
            zones=list(spec.network.zones),
            tags=tags,
            cidr=spec.network.cidr,
            vpc_id=spec.network.vpc_id,
            subnet_ids=list(spec.network.subnet_ids),
            nat_per_zone=scope.prod,
        ),
        opts=child,
    )
    lustre_sg = lustre_security_group(name, network.vpc_id, tags, child) if spec.storage.shared else None
    head_sg = head_security_group(scope, network.vpc_id) if spec.scheduler.kind == "slurm" else None
    if spec.network.security_group_id:
        # A brought group must let its nodes out to the file system on the Lustre ports (README, Operate).
        security_group_id = pulumi.Output.from_input(spec.network.security_group_id)
    else:
        admin = [str(c) for c in spec.network.admin_cidrs]
        security_group_id = node_security_group(
            name, network.vpc_id, admin, tags, child, lustre_sg_id=lustre_sg.id if lustre_sg else None,
            slurm_head_sg_id=head_sg.id if head_sg else None,
        ).id
    return ClusterNetwork(network.vpc_id, network.subnet_ids, security_group_id, lustre_sg, head_sg)


def create_key(scope: ClusterScope) -> ClusterKey:
    """The cluster key with the service-linked roles its policy names, or the brought key."""
    spec, name = scope.spec, scope.name
    if spec.storage.kms_key != "create":
        return ClusterKey(pulumi.Output.from_input(spec.storage.kms_key), None)
    fleet = any(g.provisioner == "fleet" for g in spec.node_groups)
    suffix = role_suffix(name, spec.environment, spec.region)
    roles = cluster_roles(spec.identity.service_linked_roles, suffix, fleet)
    key, created = cluster_key(
        name,
        LogGroupGrant(region=spec.region, name=_log_group_name(spec),
                      also=eks_log_groups(spec.scheduler.kind, spec.name, spec.environment)),
        spec.environment,
        roles.named,
        create_roles=roles.create,
        events=bool(interruption_readers(spec)),
        protect=scope.prod,
        tags=scope.tags,
        opts=scope.child,
        publishers=TOPIC_PUBLISHERS if scope.resolved.alarm_target_mode == "create" else (),
        role_patterns=(*roles.patterns, *managed_node_roles(spec.scheduler.kind, roles.named)),
    )
    autoscaling_role_arn = created[AUTOSCALING.service].arn if roles.named[0].suffix is not None else None
    return ClusterKey(key.arn, autoscaling_role_arn)


def create_logs(
    scope: ClusterScope, network: ClusterNetwork, key_arn: pulumi.Output[str], account: pulumi.Output[str]
) -> aws.cloudwatch.LogGroup:
    """The cluster's log group under the key, and the flow log of a created VPC into it (a brought VPC keeps its
    owner's flow logs)."""
    spec, name = scope.spec, scope.name
    log_group = aws.cloudwatch.LogGroup(
        f"{name}-logs",
        name=_log_group_name(spec),
        retention_in_days=spec.monitoring.log_retention_days,
        kms_key_id=key_arn,
        tags=scope.tags,
        opts=scope.child,
    )
    if spec.network.cidr is not None:
        vpc_flow_log(name, network.vpc_id, log_group, account, spec.region, spec.identity.permissions_boundary,
                     scope.tags, scope.child)
    return log_group


def create_identity(scope: ClusterScope, log_group: aws.cloudwatch.LogGroup, account: pulumi.Output[str],
                    munge: aws.secretsmanager.Secret | None = None, key_arn: pulumi.Input[str] | None = None
                    ) -> NodeIdentity:
    """The node role and instance profile, or the brought instance profile; with Slurm, the role reads the munge
    key's secret."""
    spec = scope.spec
    if spec.identity.instance_profile_arn:
        return NodeIdentity(pulumi.Output.from_input(spec.identity.instance_profile_arn), None)
    identity = AwsNodeIdentity(
        f"{scope.name}-node",
        NodeIdentityArgs(
            account_id=account,
            region=spec.region,
            log_group_arn=log_group.arn,
            group_names=[
                g.names["scaling_group"] for g in scope.resolved.groups if g.spec.provisioner == "autoscaling"
            ],
            s3_read_prefixes=list(spec.identity.s3_read_prefixes),
            s3_write_prefixes=list(spec.identity.s3_write_prefixes),
            s3_kms_keys=list(spec.identity.s3_kms_keys),
            permissions_boundary=spec.identity.permissions_boundary,
            mark_unhealthy=spec.monitoring.gpu_metrics,
            agent_tags=spec.monitoring.gpu_metrics,
            eks_cluster=eks_cluster_name(spec.name, spec.environment) if spec.scheduler.kind == "kubernetes" else None,
            munge_secret_arn=munge.arn if munge else None,
            munge_key_arn=key_arn if munge else None,
            tags=scope.tags,
        ),
        opts=scope.child,
    )
    return NodeIdentity(identity.instance_profile_arn, identity.role_arn)


def create_kubernetes(scope: ClusterScope, network: ClusterNetwork, key_arn: pulumi.Output[str],
                      identity: NodeIdentity, account: pulumi.Output[str]) -> EksCluster | None:
    """scheduler kubernetes: the EKS control plane, who reaches it, the add-ons the nodes need first and the workload
    roles (eks_steps.py); None for a VM cluster."""
    if scope.spec.scheduler.kind != "kubernetes":
        return None
    from .eks_steps import eks_control_plane

    return eks_control_plane(scope, network.subnet_ids, network.security_group_id, key_arn, identity.role_arn, account)


def create_in_cluster(scope: ClusterScope, kubernetes: EksCluster | None, groups: dict[str, AwsNodeGroup]) -> None:
    """scheduler kubernetes: CoreDNS and the in-cluster components once the node groups exist."""
    if kubernetes is not None:
        from .eks_steps import eks_workloads

        eks_workloads(scope, kubernetes, list(groups.values()))


def create_interruption_events(scope: ClusterScope, key_arn: pulumi.Output[str]) -> pulumi.Output[str] | None:
    """The topic of spot interruption and rebalance events with the alarm emails on it; None without both."""
    readers = interruption_readers(scope.spec)
    if not readers:
        return None
    return interruption_topic(scope.name, key_arn, readers, scope.tags, scope.child).arn


def create_alarm_target(
    scope: ClusterScope, key_arn: pulumi.Output[str], account: pulumi.Output[str]
) -> AlarmTarget | None:
    """The topic alarms and the budget notify: created (with its recipients) or brought; None without either."""
    alarms = scope.spec.monitoring.alarms
    mode = scope.resolved.alarm_target_mode
    if mode == "create":
        emails = list(alarms.emails) if alarms else []
        return alarm_topic(scope.name, key_arn, account, emails, scope.tags, scope.child)
    if mode == "bring" and alarms is not None:
        return AlarmTarget(arn=pulumi.Output.from_input(alarms.target), publish_policy=None)
    return None


def create_budget(scope: ClusterScope, alarm_target: AlarmTarget | None) -> None:
    """An AWS Budget notifying the alarm target at budget.alert_at_percent."""
    budget = scope.spec.budget
    if budget.alert_at_percent and alarm_target is not None:
        # Budgets must be allowed to publish before its notifications exist (AWS budgets-sns-policy): policy first.
        policy = alarm_target.publish_policy
        opts = pulumi.ResourceOptions.merge(scope.child, pulumi.ResourceOptions(depends_on=[policy] if policy else []))
        cost_budget(scope.name, scope.name, budget, alarm_target.arn, scope.tags, opts)


def create_shared_storage(
    scope: ClusterScope, network: ClusterNetwork, key_arn: pulumi.Output[str]
) -> SharedFileSystem | None:
    """FSx for Lustre behind its security group, and its mount; None without storage.shared."""
    spec, name, lustre_sg = scope.spec, scope.name, network.lustre_security_group
    shared = spec.storage.shared
    if shared is None or lustre_sg is None:
        return None
    rules = lustre_access(name, lustre_sg.id, network.security_group_id, scope.child)
    assert shared.capacity_gib is not None  # the AWS checks refused any other size
    # The file servers sit in one zone: the RDMA groups' zone when there is one, else the first.
    zone = next((g.zones[0] for g in scope.resolved.groups if g.rdma), spec.network.zones[0])
    file_system = lustre_file_system(
        name, shared, shared.capacity_gib, network.subnet_ids[zone], lustre_sg.id, key_arn, scope.prod, scope.tags,
        scope.child, rules,
    )
    mount = pulumi.Output.all(file_system.dns_name, file_system.mount_name).apply(
        lambda v: SharedMount(dns_name=v[0], mount_name=v[1], mount=shared.mount)
    )
    return SharedFileSystem(file_system.id, mount)


def create_groups(
    scope: ClusterScope, network: ClusterNetwork, key: ClusterKey, identity: NodeIdentity,
    alarm_target: pulumi.Output[str] | None, shared: SharedFileSystem | None, kubernetes: EksCluster | None = None,
    head: SlurmHead | None = None,
) -> dict[str, AwsNodeGroup]:
    """One Auto Scaling group or EC2 Fleet per node group, each with its alarms and idle scale-down; with Kubernetes
    or Slurm, the nodes join the cluster."""
    spec, name = scope.spec, scope.name
    image = scope.resolved.image  # the spec check made sure it exists
    hooks = group_hooks(spec.bootstrap.checkpoint_grace_seconds)
    groups: dict[str, AwsNodeGroup] = {}
    for resolved_group in scope.resolved.groups:
        group = resolved_group.spec
        node_group = AwsNodeGroup(
            f"{name}-{group.name}",
            NodeGroupArgs(
                group=group,
                types=resolved_group.known_types,
                rdma=resolved_group.rdma,
                asg_name=resolved_group.names["scaling_group"],
                image_id=image.id,
                image_tags=image_tags(spec.image, image),
                subnet_ids=[network.subnet_ids[zone] for zone in resolved_group.zones],
                security_group_id=network.security_group_id,
                instance_profile_arn=identity.instance_profile_arn,
                key_arn=key.arn,
                root_volume_gb=spec.storage.root_volume_gb,
                user_data=group_user_data(scope, resolved_group, hooks, shared, head),
                hooks=hooks,
                tags=scope.tags,
                service_linked_role_arn=key.autoscaling_role_arn,
                eks=kubernetes.control.join if kubernetes else None,
            ),
            opts=scope.child,
        )
        _group_operations(scope, resolved_group, node_group, alarm_target)
        groups[group.name] = node_group
    return groups


def _group_operations(scope: ClusterScope, resolved_group: ResolvedGroup, node_group: AwsNodeGroup,
                      alarm_target: pulumi.Output[str] | None) -> None:
    """The group's alarms and its idle scale-down (Auto Scaling groups only), children of the group."""
    group, name = resolved_group.spec, f"{scope.name}-{resolved_group.spec.name}"
    scaling_group = resolved_group.names["scaling_group"]
    scaling = group.provisioner == "autoscaling"
    alarms = scope.spec.monitoring.alarms
    group_opts = pulumi.ResourceOptions(parent=node_group)
    if alarms is not None and alarm_target is not None:
        group_alarms(name, scaling_group, scaling, alarms.low_utilisation, alarm_target, scope.tags, group_opts)
    if group.idle is not None and scaling:
        idle_scale_down(name, node_group.group_name, scaling_group, group.size.min, group.idle, scope.tags,
                        group_opts)
