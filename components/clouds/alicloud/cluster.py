"""The Alibaba Cloud GPU cluster: network, KMS key, RAM role, security group, interruption events, the scale-out
gate, node groups, and their GPU metrics, alarms and idle scale-down."""

from __future__ import annotations

from dataclasses import replace

import pulumi
import pulumi_alicloud as alicloud

from gpufleet.lock.status import image_tags
from gpufleet.resolve import ResolvedCluster, ResolvedGroup

from ...bootstrap import BootstrapConfig, render_user_data
from ...bootstrap.for_group import group_bootstrap
from ...bootstrap.operations import GpuMetrics
from ...tags import resource_tags
from .alarms import contact_group, group_alarms, idle_scale_down, metrics_group
from .eri import ERDMA_MTU, eri_count
from .identity import AlicloudNodeIdentity, NodeIdentityArgs
from .interruptions import interruption_rule
from .lifecycle import group_hooks
from .network import AlicloudNetwork, AlicloudNetworkArgs
from .nodegroup import AlicloudNodeGroup, NodeGroupArgs
from .scale_out_gate import AlicloudScaleOutGate, ScaleOutGateArgs
from .security import node_security_group
from .storage import cluster_key

# Of the length of a CloudMonitor application group id, for the user data size check before the group exists.
METRICS_GROUP_ID_PLACEHOLDER = "0" * 20


def _bootstrap(resolved: ResolvedCluster, group: ResolvedGroup) -> BootstrapConfig:
    """eRDMA nodes set jumbo-frame MTU and, since their launch path has no metadata tokens, guard the metadata
    service to root. With GPU metrics, the node publishes into the application group (set once it exists) and an
    ESS node marks itself unhealthy in its scaling group on a fatal GPU error."""
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


class AlicloudGpuCluster(pulumi.ComponentResource):
    """A GPU cluster in one region from a validated spec and a locked image profile."""

    def __init__(self, resolved: ResolvedCluster, opts: pulumi.ResourceOptions | None = None) -> None:
        spec = resolved.spec
        name = spec.name
        super().__init__("gpufleet:alicloud:Cluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = resource_tags(spec.tags, spec.name, spec.environment)
        prod = spec.environment == "prod"
        image = resolved.image
        assert image is not None, "the spec check makes sure the lock has an entry for the region"
        net = spec.network
        network = AlicloudNetwork(
            f"{name}-net",
            AlicloudNetworkArgs(zones=list(net.zones), tags=tags, cidr=net.cidr, vpc_id=net.vpc_id,
                                vswitch_ids=list(net.vswitch_ids)),
            opts=child,
        )
        if spec.storage.kms_key == "create":
            instance = spec.storage.dkms_instance_id
            assert instance is not None, "the spec check requires a KMS instance for a created key"
            key_id: pulumi.Output[str] = cluster_key(name, instance, prod, tags, child).id
        else:
            key_id = pulumi.Output.from_input(spec.storage.kms_key)
        if net.security_group_id:
            security_group_id = pulumi.Output.from_input(net.security_group_id)
        else:
            admin = [str(c) for c in net.admin_cidrs]
            security_group_id = node_security_group(name, network.vpc_id, admin, tags, child).id
        account = alicloud.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id
        monitoring = spec.monitoring
        alarms = monitoring.alarms
        contact: pulumi.Input[str] | None = None
        if resolved.alarm_target_mode == "create":  # for alarms: budget alerts are not offered on Alibaba Cloud
            contact = contact_group(name, spec.region, list(alarms.emails) if alarms else [], child).id
        elif resolved.alarm_target_mode == "bring" and alarms is not None:
            contact = alarms.target
        gpu_metrics = metrics_group(name, spec.region, contact, tags, child) if monitoring.gpu_metrics else None
        identity = None
        if spec.identity.ram_role_name:
            role_name: pulumi.Output[str] = pulumi.Output.from_input(spec.identity.ram_role_name)
        else:
            identity = AlicloudNodeIdentity(
                f"{name}-node",
                NodeIdentityArgs(account_id=account, region=spec.region, tags=tags,
                                 oss_read_prefixes=list(spec.identity.oss_read_prefixes),
                                 gpu_metrics=monitoring.gpu_metrics),
                opts=child,
            )
            role_name = identity.role_name
        rule = None
        if any(g.spot for g in spec.node_groups):
            rule = interruption_rule(name, spec.region, account, spec.monitoring.log_retention_days, contact, tags,
                                     child)

        hooks = group_hooks(spec.bootstrap.checkpoint_grace_seconds)
        scaled = [g for g in resolved.groups if g.spec.provisioner == "autoscaling"]
        gate = None
        if scaled:
            gate = AlicloudScaleOutGate(
                f"{name}-scale-out-gate",
                ScaleOutGateArgs(cluster=name, region=spec.region, account_id=account, tags=tags,
                                 checkpoint_grace_seconds=spec.bootstrap.checkpoint_grace_seconds,
                                 concurrency=max(g.spec.size.max for g in scaled),
                                 sizes_groups=any(not eri_count(g.known_types[0], g.rdma) for g in scaled)),
                opts=child,
            )
        groups: dict[str, AlicloudNodeGroup] = {}
        for group in resolved.groups:
            deployment_set = None
            if group.name in spec.low_latency_groups:
                deployment_set = alicloud.ecs.EcsDeploymentSet(
                    f"{name}-{group.name}-ds", deployment_set_name=f"{name}-{group.name}", strategy="LowLatency",
                    opts=child,
                ).id
            groups[group.name] = AlicloudNodeGroup(
                f"{name}-{group.name}",
                NodeGroupArgs(
                    group=group.spec,
                    types=group.known_types,
                    rdma=group.rdma,
                    group_name=group.names["scaling_group"],
                    image_id=image.id,
                    image_tags=image_tags(spec.image, image),
                    vswitch_ids=[network.vswitch_ids[zone] for zone in group.zones],
                    security_group_id=security_group_id,
                    role_name=role_name,
                    key_id=key_id,
                    root_volume_gb=spec.storage.root_volume_gb,
                    user_data=_user_data(_bootstrap(resolved, group),
                                         gpu_metrics.id if gpu_metrics else None),
                    hooks=hooks,
                    tags=tags,
                    deployment_set_id=deployment_set,
                    launch_notification_arn=gate.notification_arn if gate else None,
                    terminate_notification_arn=gate.checkpoint_arn if gate else None,
                ),
                opts=child,
            )
            group_opts = pulumi.ResourceOptions(parent=groups[group.name])
            if gpu_metrics is not None and alarms is not None and contact is not None:
                group_alarms(f"{name}-{group.name}", group.names["scaling_group"], gpu_metrics, account,
                             alarms.low_utilisation, contact, group_opts)
            if gpu_metrics is not None and group.spec.idle is not None and group.spec.provisioner == "autoscaling":
                idle_scale_down(f"{name}-{group.name}", groups[group.name].group_id, group.names["scaling_group"],
                                gpu_metrics, group.spec.size.min, group.spec.idle, group_opts)
        scaled_ids = [groups[g.name].group_id for g in scaled]
        grants: list[pulumi.Resource] = [identity.attach(scaled_ids)] if identity is not None else []
        if gate is not None:
            # The first nodes are gated and complete their hooks only with both roles' grants in place.
            grants.append(gate.attach(scaled_ids))
            for group in scaled:
                groups[group.name].start(grants, gate)

        self.group_ids = {n: g.group_id for n, g in groups.items()}
        self.security_group_id = security_group_id
        self.role_name = role_name
        self.key_id = key_id
        self.vswitch_ids = network.vswitch_ids
        self.vpc_id = network.vpc_id
        self.interruption_rule = rule.rule_name if rule else None
        self.metrics_group_id = gpu_metrics.id if gpu_metrics else None
        self.alarm_contact_group = pulumi.Output.from_input(contact) if contact is not None else None
        self.register_outputs(self.exports())

    def exports(self) -> dict[str, object]:
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
        }
