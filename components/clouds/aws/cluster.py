"""The AWS GPU cluster: network, key, identity, security group, interruption events, node groups."""

from __future__ import annotations

from dataclasses import replace

import pulumi
import pulumi_aws as aws

from gpufleet.lock.status import image_tags
from gpufleet.resolve import ResolvedCluster

from ...bootstrap import render_user_data
from ...bootstrap.for_group import group_bootstrap
from ...bootstrap.operations import GpuMetrics, SharedMount
from ...tags import resource_tags
from .alarms import TOPIC_PUBLISHERS, alarm_topic, group_alarms, idle_scale_down
from .budget import cost_budget
from .flow_logs import vpc_flow_log
from .identity import METRICS_NAMESPACE, AwsNodeIdentity, NodeIdentityArgs
from .interruptions import interruption_topic
from .key_policy import AUTOSCALING, LogGroupGrant, cluster_roles, role_suffix
from .lifecycle import group_hooks, node_check_retry_seconds
from .network import AwsNetwork, AwsNetworkArgs
from .nodegroup import AwsNodeGroup, NodeGroupArgs
from .security import node_security_group
from .shared_storage import lustre_access, lustre_file_system, lustre_security_group
from .storage import cluster_key


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
    """SNS topic of spot interruption and rebalance events; None without spot groups."""
    alarm_topic_arn: pulumi.Output[str] | None
    """The topic alarms and the budget notify (created or brought); None without alarms or budget alerts."""
    shared_file_system_id: pulumi.Output[str] | None
    """The FSx for Lustre file system; None without storage.shared."""

    def __init__(
        self,
        resolved: ResolvedCluster,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        spec, lock = resolved.spec, resolved.lock
        name = spec.name
        super().__init__("gpufleet:aws:Cluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = resource_tags(spec.tags, spec.name, spec.environment)
        prod = spec.environment == "prod"
        image = lock.image_entry(spec.image, "aws", spec.region)  # the spec check made sure it exists

        network = AwsNetwork(
            f"{name}-net",
            AwsNetworkArgs(
                region=spec.region,
                zones=list(spec.network.zones),
                tags=tags,
                cidr=spec.network.cidr,
                vpc_id=spec.network.vpc_id,
                subnet_ids=list(spec.network.subnet_ids),
                nat_per_zone=prod,
            ),
            opts=child,
        )
        log_group_name = f"/gpufleet/{name}/{spec.environment}"
        spot = any(g.capacity in ("spot", "mixed") for g in spec.node_groups)
        monitoring, budget = spec.monitoring, spec.budget
        alarms = monitoring.alarms
        # The alarm topic exists when alarms or budget alerts need one and no topic is brought.
        notify = alarms is not None or bool(budget.alert_at_percent)
        create_topic = notify and (alarms is None or alarms.target == "create")
        # The groups' own Auto Scaling role (per-cluster), made before the key that names it; None: the default.
        asg_role_arn: pulumi.Output[str] | None = None
        if spec.storage.kms_key == "create":
            fleet = any(g.provisioner == "fleet" for g in spec.node_groups)
            suffix = role_suffix(name, spec.environment, spec.region)
            roles = cluster_roles(spec.identity.service_linked_roles, suffix, fleet)
            key, created = cluster_key(
                name,
                LogGroupGrant(region=spec.region, name=log_group_name),
                roles.named,
                create_roles=roles.create,
                events=spot,
                protect=prod,
                tags=tags,
                opts=child,
                publishers=TOPIC_PUBLISHERS if create_topic else (),
                role_patterns=roles.patterns,
            )
            key_arn: pulumi.Output[str] = key.arn
            if roles.named[0].suffix is not None:
                asg_role_arn = created[AUTOSCALING.service].arn
        else:
            key_arn = pulumi.Output.from_input(spec.storage.kms_key)
        log_group = aws.cloudwatch.LogGroup(
            f"{name}-logs",
            name=log_group_name,
            retention_in_days=monitoring.log_retention_days,
            kms_key_id=key_arn,
            tags=tags,
            opts=child,
        )
        shared = spec.storage.shared
        lustre_sg = lustre_security_group(name, network.vpc_id, tags, child) if shared else None
        if spec.network.security_group_id:
            # A brought group must let its nodes out to the file system on the Lustre ports (README, Operate).
            security_group_id = pulumi.Output.from_input(spec.network.security_group_id)
        else:
            admin = [str(c) for c in spec.network.admin_cidrs]
            security_group_id = node_security_group(
                name, network.vpc_id, admin, tags, child, lustre_sg_id=lustre_sg.id if lustre_sg else None
            ).id
        account = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id
        if spec.network.cidr is not None:  # a brought VPC keeps its owner's flow logs
            vpc_flow_log(name, network.vpc_id, log_group, account, spec.region, spec.identity.permissions_boundary,
                         tags, child)
        shared_mount: pulumi.Output[SharedMount] | None = None
        file_system = None
        if shared is not None and lustre_sg is not None:
            rules = lustre_access(name, lustre_sg.id, security_group_id, child)
            assert shared.capacity_gib is not None  # the AWS checks refused any other size
            # The file servers sit in one zone: the RDMA groups' zone when there is one, else the first.
            zone = next((g.zones[0] for g in resolved.groups if g.rdma), spec.network.zones[0])
            file_system = lustre_file_system(
                name, shared, shared.capacity_gib, network.subnet_ids[zone], lustre_sg.id, key_arn, prod, tags, child,
                rules,
            )
            shared_mount = pulumi.Output.all(file_system.dns_name, file_system.mount_name).apply(
                lambda v: SharedMount(dns_name=v[0], mount_name=v[1], mount=shared.mount)
            )
        if spec.identity.instance_profile_arn:
            profile_arn: pulumi.Output[str] = pulumi.Output.from_input(spec.identity.instance_profile_arn)
            role_arn: pulumi.Output[str] | None = None
        else:
            identity = AwsNodeIdentity(
                f"{name}-node",
                NodeIdentityArgs(
                    account_id=account,
                    region=spec.region,
                    log_group_arn=log_group.arn,
                    group_names=[
                        g.names["scaling_group"] for g in resolved.groups if g.spec.provisioner == "autoscaling"
                    ],
                    s3_read_prefixes=list(spec.identity.s3_read_prefixes),
                    s3_write_prefixes=list(spec.identity.s3_write_prefixes),
                    s3_kms_keys=list(spec.identity.s3_kms_keys),
                    permissions_boundary=spec.identity.permissions_boundary,
                    mark_unhealthy=monitoring.gpu_metrics,
                    agent_tags=monitoring.gpu_metrics,
                    tags=tags,
                ),
                opts=child,
            )
            profile_arn, role_arn = identity.instance_profile_arn, identity.role_arn
        if spot:
            topic_arn: pulumi.Output[str] | None = interruption_topic(name, key_arn, tags, child).arn
        else:
            topic_arn = None
        alarm_target: pulumi.Output[str] | None = None
        if create_topic:
            alarm_target = alarm_topic(name, key_arn, account, list(alarms.emails) if alarms else [], tags, child).arn
        elif notify and alarms is not None:
            alarm_target = pulumi.Output.from_input(alarms.target)
        if budget.alert_at_percent and alarm_target is not None:
            cost_budget(name, spec.name, budget, alarm_target, tags, child)

        hooks = group_hooks(spec.bootstrap.checkpoint_grace_seconds)
        groups: dict[str, AwsNodeGroup] = {}
        for resolved_group in resolved.groups:
            group, types, rdma = resolved_group.spec, resolved_group.known_types, resolved_group.rdma
            subnets = [network.subnet_ids[zone] for zone in resolved_group.zones]
            hooked = group.provisioner == "autoscaling"
            bootstrap = group_bootstrap(
                resolved,
                resolved_group,
                checkpoint_grace_seconds=hooks.terminate.heartbeat_timeout,
                lifecycle=hooks.for_node(spec.region, resolved_group.names["scaling_group"]) if hooked else None,
                node_check_retry_seconds=node_check_retry_seconds(group.gpu_sharing.mode == "mig")
                if hooked else 0,
                gpu_metrics=GpuMetrics(METRICS_NAMESPACE, resolved_group.names["scaling_group"], spec.region)
                if monitoring.gpu_metrics
                else None,
            )
            # The mount needs the file system's DNS and mount names, known once it exists; rendering once with
            # names of their full length first reports a user data over the limit before any resource.
            if shared is not None:
                render_user_data(replace(bootstrap, shared_mount=SharedMount(
                    f"fs-{'0' * 17}.fsx.{spec.region}.amazonaws.com", "0" * 8, shared.mount)))
            user_data: pulumi.Input[str] = (
                shared_mount.apply(lambda mount, cfg=bootstrap: render_user_data(replace(cfg, shared_mount=mount)))
                if shared_mount is not None
                else render_user_data(bootstrap)
            )
            groups[group.name] = AwsNodeGroup(
                f"{name}-{group.name}",
                NodeGroupArgs(
                    group=group,
                    types=types,
                    rdma=rdma,
                    asg_name=resolved_group.names["scaling_group"],
                    image_id=image.id,
                    image_tags=image_tags(spec.image, image),
                    subnet_ids=subnets,
                    security_group_id=security_group_id,
                    instance_profile_arn=profile_arn,
                    key_arn=key_arn,
                    root_volume_gb=spec.storage.root_volume_gb,
                    user_data=user_data,
                    hooks=hooks,
                    tags=tags,
                    service_linked_role_arn=asg_role_arn,
                ),
                opts=child,
            )
            scaling = group.provisioner == "autoscaling"
            group_opts = pulumi.ResourceOptions(parent=groups[group.name])
            if alarms is not None and alarm_target is not None:
                group_alarms(f"{name}-{group.name}", resolved_group.names["scaling_group"], scaling,
                             alarms.low_utilisation, alarm_target, tags, group_opts)
            if group.idle is not None and scaling:
                idle_scale_down(f"{name}-{group.name}", groups[group.name].group_name,
                                resolved_group.names["scaling_group"], group.size.min, group.idle, tags, group_opts)

        self.group_names = {n: g.group_name for n, g in groups.items()}
        self.placement_groups = {n: g.placement_group for n, g in groups.items() if g.placement_group}
        self.security_group_id = security_group_id
        self.role_arn = role_arn
        self.instance_profile_arn = profile_arn
        self.key_arn = key_arn
        self.subnet_ids = network.subnet_ids
        self.vpc_id = network.vpc_id
        self.interruption_topic_arn = topic_arn
        self.alarm_topic_arn = alarm_target
        self.shared_file_system_id = file_system.id if file_system else None
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
        }
