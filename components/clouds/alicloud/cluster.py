"""The Alibaba Cloud GPU cluster: a list of steps (network, key, identity, alarm target, GPU metrics group,
interruption events, scale-out gate, node groups, then starting the gated groups), each a `create_*` function below
whose resources are children of the cluster. With `scheduler: kubernetes` the ACK steps (ack_steps.py) take the place
of the node identity, the metrics group, the interruption events, the gate and the scaling groups: the ACK cluster, one
node pool per node group, and the in-cluster layer."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pulumi
import pulumi_alicloud as alicloud

from gpufleet.clouds.backend import ResolvedCluster, ResolvedGroup
from gpufleet.lock.status import image_tags

from ... import runtime
from ...bootstrap import BootstrapConfig, render_user_data
from ...bootstrap.for_group import group_bootstrap
from ...bootstrap.operations import GpuMetrics
from ..scope import ClusterScope
from .alarms import contact_group, group_alarms, idle_scale_down, metrics_group, seeded_metrics
from .eri import ERDMA_MTU, eri_count, primary_eni_both_ways
from .identity import AlicloudNodeIdentity, NodeIdentityArgs
from .interruptions import interruption_rule
from .lifecycle import group_hooks, node_check_retry_seconds
from .metric_seed import seed_metrics
from .network import AlicloudNetwork, AlicloudNetworkArgs
from .nodegroup import AlicloudNodeGroup, NodeGroupArgs
from .scale_out_gate import AlicloudScaleOutGate, ScaleOutGateArgs
from .security import eri_lane_security_groups, node_security_group
from .slurm_head import AlicloudSlurmHead, build_slurm_head, grant_head_scaling, join_user_data, munge_parameter_name
from .storage import cluster_key

# Of the length of a CloudMonitor application group id, for the user data size check before the group exists.
METRICS_GROUP_ID_PLACEHOLDER = "0" * 20


class AlicloudGpuCluster(pulumi.ComponentResource):
    """A GPU cluster in one region from a validated spec and a locked image profile."""

    def __init__(self, resolved: ResolvedCluster, opts: pulumi.ResourceOptions | None = None) -> None:
        if resolved.spec.scheduler.kind == "kubernetes":
            from .ack_in_cluster import refuse_unpinned_kubernetes  # the in-cluster layer loads only for Kubernetes

            refuse_unpinned_kubernetes(resolved)
        super().__init__("gpufleet:alicloud:Cluster", resolved.spec.name, None, opts)
        scope = ClusterScope.of(resolved, self)
        caller = alicloud.get_caller_identity_output(opts=scope.invoke())
        account = caller.account_id
        network = create_network(scope)
        key_id = create_key(scope)
        self.kubernetes_outputs: dict[str, object] = {}
        if resolved.spec.scheduler.kind == "kubernetes":
            self._kubernetes(scope, network, key_id, account, caller.arn)
            return
        identity = create_identity(scope, account, key_id)
        contact = create_alarm_target(scope)
        gpu_metrics = create_gpu_metrics(scope, contact)
        rule = create_interruption_events(scope, account, contact)
        gate = create_scale_out_gate(scope, account)
        head = build_slurm_head(scope, network.vpc_id, network.vswitch_ids, network.security_group_id, key_id)
        groups = create_groups(scope, network, key_id, identity, gate, gpu_metrics, contact, account, head)
        start_groups(scope, groups, identity, gate)
        if head is not None:
            grant_head_scaling(scope, head, account, key_id, [g.group_id for g in groups.values()])

        self.group_ids = {n: g.group_id for n, g in groups.items()}
        self.security_group_id = network.security_group_id
        self.role_name = identity.role_name
        self.key_id = key_id
        self.vswitch_ids = network.vswitch_ids
        self.vpc_id = network.vpc_id
        self.interruption_rule = rule.rule_name if rule else None
        self.metrics_group_id = gpu_metrics.id if gpu_metrics else None
        self.alarm_contact_group = pulumi.Output.from_input(contact) if contact is not None else None
        self.register_outputs(self.exports())

    def _kubernetes(self, scope: ClusterScope, network: ClusterNetwork, key_id: pulumi.Output[str],
                    account: pulumi.Output[str], deployer_arn: pulumi.Output[str]) -> None:
        """scheduler kubernetes: the alarm target, the ACK cluster and its admins, one node pool per group (with its
        metrics and alarms), the in-cluster layer."""
        from .ack_alerts import alarm_contact_group
        from .ack_steps import ack_control_plane, ack_node_pools, ack_workloads

        contact = alarm_contact_group(scope)  # ARMS's: ACK's alerts come from ARMS Prometheus (ack_alerts.py)
        kubernetes = ack_control_plane(scope, network.vswitch_ids, network.security_group_id, key_id, account,
                                       deployer_arn)
        pools, system = ack_node_pools(scope, kubernetes, network.vswitch_ids, network.security_group_id, key_id,
                                       contact)
        ack_workloads(scope, kubernetes, [*pools.values(), system])
        self.group_ids = {n: p.id for n, p in pools.items()}
        self.security_group_id = network.security_group_id
        self.role_name = None
        self.key_id = key_id
        self.vswitch_ids = network.vswitch_ids
        self.vpc_id = network.vpc_id
        self.interruption_rule = None
        self.metrics_group_id = None
        self.alarm_contact_group = pulumi.Output.from_input(contact) if contact is not None else None
        self.kubernetes_outputs = kubernetes.exports()
        self.register_outputs(self.exports())

    def exports(self) -> dict[str, object]:
        """The stack outputs, by name: what callers and `pulumi stack output` read."""
        return {
            "group_ids": self.group_ids,
            "security_group_id": self.security_group_id,
            "role_name": self.role_name,
            "key_id": self.key_id,
            "vswitch_ids": self.vswitch_ids,
            "vpc_id": self.vpc_id,
            "interruption_rule": self.interruption_rule,
            "metrics_group_id": self.metrics_group_id,
            "alarm_contact_group": self.alarm_contact_group,
            **self.kubernetes_outputs,
        }


@dataclass(frozen=True)
class ClusterNetwork:
    """What the nodes live in, created or brought."""

    vpc_id: pulumi.Output[str]
    vswitch_ids: dict[str, pulumi.Output[str]]
    """vSwitch per zone."""
    security_group_id: pulumi.Output[str]
    """The node security group, created or brought."""
    eri_lane_security_group_ids: tuple[pulumi.Output[str], ...] = ()
    """ERI lanes 2..n of the scaling configurations (security.py eri_lane_security_groups)."""


@dataclass(frozen=True)
class NodeIdentity:
    """What the nodes run as."""

    role_name: pulumi.Output[str]
    created: AlicloudNodeIdentity | None
    """The created role, whose grants on the scaling groups follow them; None when the stack brings a role."""


def create_network(scope: ClusterScope) -> ClusterNetwork:
    """The VPC and vSwitches (created or brought) and the node security group."""
    net, name = scope.spec.network, scope.name
    network = AlicloudNetwork(
        f"{name}-net",
        AlicloudNetworkArgs(zones=list(net.zones), tags=scope.tags, base=scope.base, cidr=net.cidr, vpc_id=net.vpc_id,
                            vswitch_ids=list(net.vswitch_ids)),
        opts=scope.child,
    )
    if net.security_group_id:
        security_group_id = pulumi.Output.from_input(net.security_group_id)
    else:
        admin = [str(c) for c in net.admin_cidrs]
        security_group_id = node_security_group(name, network.vpc_id, admin, scope.tags, scope.child).id
    # Only ESS scaling configurations take ERIs (nodegroup.py); ACK pools make their own.
    scaled = [g for g in scope.resolved.groups if g.spec.provisioner == "autoscaling"]
    vm_cluster = scope.spec.scheduler.kind != "kubernetes"
    most_eris = max((eri_count(g.known_types[0], g.rdma) for g in scaled), default=0) if vm_cluster else 0
    lanes = eri_lane_security_groups(name, network.vpc_id, most_eris, scope.tags, scope.child)
    return ClusterNetwork(network.vpc_id, network.vswitch_ids, security_group_id,
                          tuple(lane.id for lane in lanes))


def create_key(scope: ClusterScope) -> pulumi.Output[str]:
    """The cluster key in the stack's KMS instance, or the brought key."""
    storage = scope.spec.storage
    if storage.kms_key != "create":
        return pulumi.Output.from_input(storage.kms_key)
    instance = storage.dkms_instance_id
    assert instance is not None, "the spec check requires a KMS instance for a created key"
    return cluster_key(scope.name, scope.base, instance, scope.prod, scope.tags, scope.child).id


def create_identity(scope: ClusterScope, account: pulumi.Output[str], key_id: pulumi.Output[str]) -> NodeIdentity:
    """The node RAM role, or the brought role; with Slurm, the role reads the munge key's parameter."""
    spec = scope.spec
    slurm = spec.scheduler.kind == "slurm"
    if spec.identity.ram_role_name:
        return NodeIdentity(pulumi.Output.from_input(spec.identity.ram_role_name), None)
    identity = AlicloudNodeIdentity(
        f"{scope.name}-node",
        NodeIdentityArgs(account_id=account, region=spec.region, tags=scope.tags, base=scope.base,
                         oss_read_prefixes=list(spec.identity.oss_read_prefixes),
                         gpu_metrics=spec.monitoring.gpu_metrics,
                         munge_parameter=munge_parameter_name(scope) if slurm else None,
                         munge_key_id=key_id if slurm else None),
        opts=scope.child,
    )
    return NodeIdentity(identity.role_name, identity)


def create_alarm_target(scope: ClusterScope) -> pulumi.Input[str] | None:
    """The contact group alarms and interruption notices go to: created with its recipients, or brought (a
    name); None without alarms."""
    alarms = scope.spec.monitoring.alarms
    mode = scope.resolved.alarm_target_mode
    if alarms is None or mode is None:  # budget alerts are not offered on Alibaba Cloud: only alarms notify
        return None
    if mode == "bring":
        return alarms.target
    return contact_group(scope.name, scope.base, scope.spec.region, list(alarms.emails), scope.child).id


def create_gpu_metrics(scope: ClusterScope, contact: pulumi.Input[str] | None) -> alicloud.cms.MonitorGroup | None:
    """The application group the nodes publish their GPU metrics into; None without monitoring.gpu_metrics."""
    if not scope.spec.monitoring.gpu_metrics:
        return None
    return metrics_group(scope.name, scope.base, scope.spec.region, contact, scope.tags, scope.child)


def create_interruption_events(
    scope: ClusterScope, account: pulumi.Output[str], contact: pulumi.Input[str] | None
) -> alicloud.cms.EventRule | None:
    """The event rule keeping spot interruption notices and notifying the contact group; None without spot."""
    spec = scope.spec
    if not any(g.spot for g in spec.node_groups):
        return None
    return interruption_rule(scope.name, scope.base, spec.region, account, spec.monitoring.log_retention_days,
                             contact, scope.tags, scope.child)


def create_scale_out_gate(scope: ClusterScope, account: pulumi.Output[str]) -> AlicloudScaleOutGate | None:
    """The runbooks that gate new ESS nodes on the node check and checkpoint leaving ones; None without ESS groups."""
    spec = scope.spec
    scaled = [g for g in scope.resolved.groups if g.spec.provisioner == "autoscaling"]
    if not scaled:
        return None
    return AlicloudScaleOutGate(
        f"{scope.name}-scale-out-gate",
        ScaleOutGateArgs(base=scope.base, region=spec.region, account_id=account, tags=scope.tags,
                         checkpoint_grace_seconds=spec.bootstrap.checkpoint_grace_seconds,
                         concurrency=max(g.spec.size.max for g in scaled)),
        opts=scope.child,
    )


def create_groups(
    scope: ClusterScope, network: ClusterNetwork, key_id: pulumi.Output[str], identity: NodeIdentity,
    gate: AlicloudScaleOutGate | None, gpu_metrics: alicloud.cms.MonitorGroup | None,
    contact: pulumi.Input[str] | None, account: pulumi.Output[str], head: AlicloudSlurmHead | None = None,
) -> dict[str, AlicloudNodeGroup]:
    """One ESS scaling group or Auto Provisioning Group per node group (in a LowLatency deployment set where the
    stack asks), each with its alarms and idle scale-down; with Slurm, its nodes join the head node."""
    spec, name = scope.spec, scope.name
    hooks = group_hooks(spec.bootstrap.checkpoint_grace_seconds)
    groups: dict[str, AlicloudNodeGroup] = {}
    for group in scope.resolved.groups:
        # The image of the boot mode the group's types boot (the spec checks make sure there is one).
        image = scope.resolved.group_image(group)
        assert image is not None, "the spec checks make sure the lock has an image the group boots"
        deployment_set = None
        if group.name in spec.low_latency_groups:
            deployment_set = alicloud.ecs.EcsDeploymentSet(
                f"{name}-{group.name}-ds", deployment_set_name=group.names["scaling_group"], strategy="LowLatency",
                opts=scope.child,
            ).id
        node_group = AlicloudNodeGroup(
            f"{name}-{group.name}",
            NodeGroupArgs(
                group=group.spec,
                types=group.known_types,
                rdma=group.rdma,
                group_name=group.names["scaling_group"],
                image_id=image.id,
                image_tags=image_tags(spec.image, image),
                vswitch_ids=[network.vswitch_ids[zone] for zone in group.zones],
                security_group_id=network.security_group_id,
                role_name=identity.role_name,
                key_id=key_id,
                root_volume_gb=spec.storage.root_volume_gb,
                user_data=join_user_data(scope.resolved, group, _user_data(
                    _bootstrap(scope.resolved, group), gpu_metrics.id if gpu_metrics else None), head),
                hooks=hooks,
                tags=scope.tags,
                region=spec.region,
                deployment_set_id=deployment_set,
                launch_notification_arn=gate.notification_arn if gate else None,
                terminate_notification_arn=gate.checkpoint_arn if gate else None,
                eri_lane_security_group_ids=network.eri_lane_security_group_ids,
                gzipped_user_data=head is not None,
            ),
            opts=scope.child,
        )
        if node_group.eris and group.spec.provisioner == "autoscaling":  # a scaling configuration (nodegroup.py)
            runtime.warn_unconfirmed(f"node_groups[{group.index}].rdma", primary_eni_both_ways(group.name))
        _group_operations(scope, group, node_group, gpu_metrics, contact, account)
        groups[group.name] = node_group
    return groups


def _bootstrap(resolved: ResolvedCluster, group: ResolvedGroup) -> BootstrapConfig:
    """eRDMA nodes set their ERIs' MTU by Alibaba's rule (eri.py) and, since their launch path has no metadata
    tokens, guard the metadata service to root. With GPU metrics, the node publishes into the application group (set
    once it exists) and an ESS node marks itself unhealthy in its scaling group on a fatal GPU error. The boot check
    retries inside the scale-out hold (lifecycle.py)."""
    eris = eri_count(group.known_types[0], group.rdma)
    name, spec = group.names["scaling_group"], resolved.spec
    metrics = GpuMetrics(
        METRICS_GROUP_ID_PLACEHOLDER, name, spec.region,
        scaling_group=name if group.spec.provisioner == "autoscaling" else None,
    ) if spec.monitoring.gpu_metrics else None
    return group_bootstrap(
        resolved,
        group,
        checkpoint_grace_seconds=spec.bootstrap.checkpoint_grace_seconds,
        fabric_mtu=ERDMA_MTU if eris else None,
        metadata_guard=bool(eris),
        gpu_metrics=metrics,
        node_check_retry_seconds=node_check_retry_seconds(group.spec.gpu_sharing.mode == "mig"),
    )


def _user_data(cfg: BootstrapConfig, metrics_group_id: pulumi.Output[str] | None) -> pulumi.Input[str]:
    """Rendered once with the placeholder (an oversized user data stops here, before any resource), then with the
    application group's id."""
    text = render_user_data(cfg)
    metrics = cfg.gpu_metrics
    if metrics is None or metrics_group_id is None:
        return text
    return metrics_group_id.apply(
        lambda group_id: render_user_data(replace(cfg, gpu_metrics=replace(metrics, namespace=group_id)))
    )


def _group_operations(
    scope: ClusterScope, group: ResolvedGroup, node_group: AlicloudNodeGroup,
    gpu_metrics: alicloud.cms.MonitorGroup | None, contact: pulumi.Input[str] | None, account: pulumi.Output[str],
) -> None:
    """The group's alarms and its idle scale-down (ESS groups only), children of the group, made after the seed of
    the metrics they read (metric_seed.py)."""
    name, alarms = f"{scope.name}-{group.name}", scope.spec.monitoring.alarms
    if gpu_metrics is None:
        return
    rules = alarms is not None and contact is not None
    idle = group.spec.idle is not None and group.spec.provisioner == "autoscaling"
    if not (rules or idle):
        return
    group_opts = pulumi.ResourceOptions(parent=node_group)
    seed = seed_metrics(name, gpu_metrics.id, group.names["scaling_group"], seeded_metrics(rules, idle),
                        scope.spec.region, group_opts)
    after_seed = pulumi.ResourceOptions.merge(group_opts, pulumi.ResourceOptions(depends_on=[seed]))
    if rules:
        assert alarms is not None and contact is not None  # rules says so
        group_alarms(name, group.names["scaling_group"], gpu_metrics, scope.spec.region, account,
                     alarms.low_utilisation, contact, after_seed)
    if idle:
        assert group.spec.idle is not None  # idle says so
        idle_scale_down(name, node_group.group_id, group.names["scaling_group"], gpu_metrics, group.spec.size.min,
                        group.spec.idle, after_seed)


def start_groups(scope: ClusterScope, groups: dict[str, AlicloudNodeGroup], identity: NodeIdentity,
                 gate: AlicloudScaleOutGate | None) -> None:
    """Grant the node and gate roles on the ESS groups, then size the gated groups: the first nodes are gated and
    complete their hooks only with both roles' grants in place."""
    scaled_ids = [groups[g.name].group_id for g in scope.resolved.groups if g.spec.provisioner == "autoscaling"]
    node_grant = identity.created.attach(scaled_ids) if identity.created is not None else None
    grants: list[pulumi.Resource] = [node_grant] if node_grant is not None else []
    if gate is None:
        return
    grants.append(gate.attach())
    for group in scope.resolved.groups:
        if group.spec.provisioner == "autoscaling":
            groups[group.name].start(grants)
