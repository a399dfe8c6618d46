"""scheduler slurm on Alibaba Cloud: the head node slurmctld runs on, its security group, the munge key's secret
parameter, and what the node groups add to join it (the same shape as components/clouds/aws/slurm_head.py).

- The head node: a pay-as-you-go ECS instance of the cluster's baked image (Slurm, munge, pyxis, enroot, the aliyun
  CLI) in the cluster's vSwitch, no public address (internet_max_bandwidth_out 0), metadata in hardened mode only
  (http_tokens required, hop limit 1), its system disk encrypted with the stack key, reached as the nodes are (Cloud
  Assistant / Workbench; SSH from network.admin_cidrs). Its user data (gzipped cloud-config; the provider sends a
  base64 value as it is, resource_alicloud_instance.go lines 942-948) carries components.slurm.head_files' files and
  Alibaba's part of the scripts (scripts/slurm-alicloud.sh).
- Its security group admits slurmctld and srun's ports from the nodes' security group only; the nodes' group admits
  slurmd from it. Egress stays the group's default (a basic security group accepts all outbound).
- The munge key is an OOS secret parameter encrypted with the stack key (KeyId). Pulumi creates it with a stand-in
  value (CreateSecretParameter requires Value) and never writes it again (ignore_changes value): the head node makes
  the key at its first boot and stores it with UpdateSecretParameter, so the key never is in Pulumi state. The
  provider's read calls GetSecretParameter without WithDecryption (service_alicloud_oos_v2.go
  DescribeOosSecretParameter), which returns no value ("only when WithDecryption is true does Value have a result",
  OOS API reference, GetSecretParameter), so a refresh does not bring the key into state either. A KMS Secrets
  Manager secret is not used: the provider's read of alicloud_kms_secret calls GetSecretValue and sets secret_data
  (resource_alicloud_kms_secret.go lines 265-270), which would put the key in state at every refresh.
Roles: slurm_identity.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pulumi
import pulumi_alicloud as alicloud

from components import runtime
from components.bootstrap.added_files import cloud_config_with, gzip_user_data
from components.slurm.head_files import cloud_head_config, head_site, packed_head_user_data
from components.slurm.node_files import JOIN_UNIT, node_join_files
from components.slurm.power_units import refuse_elastic_without_power_program
from components.slurm.site import SLURMCTLD_PORT, SLURMD_PORT, SRUN_PORTS
from gpufleet.lock.status import image_tags
from gpufleet.stackfile.slurm import HeadNode
from gpufleet.stackfile.slurm_checks import head_node_type

from .nodegroup import DISK_CATEGORY
from .slurm_identity import KEY_USE_UNCONFIRMED, grant_head, head_role

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster, ResolvedGroup

    from ..scope import ClusterScope

ROLE_TAG = {"gpufleet:role": "slurm-head"}
# The head node runs no containers: the metadata answers reach the instance itself only.
HEAD_METADATA_HOP_LIMIT = 1
# The secret parameter's value until the head node stores the key (scripts/slurm-alicloud.sh reads it as "none").
MUNGE_UNSET = "unset: the Slurm head node stores the munge key here at its first boot"
# The longest IPv4 address: rendering with it first reports an oversized node user data before any resource.
LONGEST_ADDRESS = "255.255.255.255"


def slurm_base(scope: ClusterScope) -> str:
    """`<cluster>-<environment>-slurm-head`: the head node's name and its resources' prefix."""
    return f"{scope.base}-slurm-head"


def munge_parameter_name(scope: ClusterScope) -> str:
    """The munge key's secret parameter: letters, digits, - and _, at most 180 characters, never starting with
    ALIYUN, ACS, ALIBABA, ALICLOUD or OOS (OOS API reference, CreateSecretParameter Name): the gpufleet prefix."""
    return f"gpufleet-{scope.base}-slurm-munge-key"


def _cloud_values(region: str, parameter: str) -> dict[str, str]:
    """The settings scripts/slurm-alicloud.sh reads (common.sh's as_node signs in GPUFLEET_REGION)."""
    return {"GPUFLEET_REGION": region, "GPUFLEET_MUNGE_SECRET": parameter, "GPUFLEET_MUNGE_UNSET": MUNGE_UNSET}


def head_cloud_config(cluster: ResolvedCluster, parameter: str) -> str:
    """The head node's cloud-config: the neutral files, its settings and Alibaba's part of the scripts."""
    return cloud_head_config(cluster, "alicloud", _cloud_values(cluster.spec.region, parameter))


def head_user_data(cluster: ResolvedCluster, parameter: str) -> str:
    """The head node's user data, gzipped and base64."""
    return packed_head_user_data(cluster, "alicloud", _cloud_values(cluster.spec.region, parameter))


def munge_parameter(scope: ClusterScope, key_id: pulumi.Input[str]) -> alicloud.oos.SecretParameter:
    """The munge key's secret parameter on the stack key, holding MUNGE_UNSET until the head node stores the key."""
    storage = scope.spec.storage
    return alicloud.oos.SecretParameter(
        munge_parameter_name(scope),
        secret_parameter_name=munge_parameter_name(scope),
        type="Secret",
        value=MUNGE_UNSET,
        key_id=key_id,
        # A created key lives in the stack's KMS instance (cluster.create_key), which CreateSecretParameter names as
        # DKMSInstanceId (resource_alicloud_oos_secret_parameter.go lines 122-124); a brought key's is unknown.
        dkms_instance_id=storage.dkms_instance_id if storage.kms_key == "create" else None,
        description=f"gpufleet {scope.base}: the Slurm cluster's munge key (stored by the head node)",
        tags=scope.tags,
        opts=pulumi.ResourceOptions.merge(scope.child, pulumi.ResourceOptions(ignore_changes=["value"])),
    )


def _rule(name: str, group_id: pulumi.Input[str], ports: tuple[int, int], source: pulumi.Input[str] | None,
          description: str, opts: pulumi.ResourceOptions, cidr: str | None = None) -> None:
    alicloud.ecs.SecurityGroupRule(
        name, security_group_id=group_id, type="ingress", ip_protocol="tcp", port_range=f"{ports[0]}/{ports[1]}",
        source_security_group_id=source, cidr_ip=cidr, policy="accept", nic_type="intranet", description=description,
        opts=opts)


def head_security_group(scope: ClusterScope, vpc_id: pulumi.Input[str], node_sg_id: pulumi.Input[str]
                        ) -> alicloud.ecs.SecurityGroup:
    """The head node's group: slurmctld and srun's ports from the nodes, SSH from the admin networks; and the nodes'
    group admitting slurmd from it."""
    name = slurm_base(scope)
    group = alicloud.ecs.SecurityGroup(
        name, security_group_name=name, description="Slurm head node: slurmctld and srun from the GPU nodes only",
        vpc_id=vpc_id, tags=scope.tags, opts=scope.child)
    _rule(f"{name}-in-slurmctld", group.id, (SLURMCTLD_PORT, SLURMCTLD_PORT), node_sg_id,
          "slurmctld from the GPU nodes", scope.child)
    _rule(f"{name}-in-srun", group.id, SRUN_PORTS, node_sg_id, "srun's ports from the GPU nodes", scope.child)
    for index, cidr in enumerate(scope.spec.network.admin_cidrs):
        _rule(f"{name}-in-ssh-{index}", group.id, (22, 22), None, "SSH from an admin network", scope.child,
              cidr=str(cidr))
    _rule(f"{name}-nodes-in-slurmd", node_sg_id, (SLURMD_PORT, SLURMD_PORT), group.id,
          "slurmd from the Slurm head node", scope.child)
    return group


@dataclass(frozen=True)
class AlicloudSlurmHead:
    """What a Slurm cluster's nodes join with, and the head's role (its policy follows the scaling groups)."""

    address: pulumi.Output[str]
    """The head node's private address, slurmctld's."""
    parameter: str
    """The munge key's secret parameter."""
    role: alicloud.ram.Role


def slurm_head(scope: ClusterScope, vpc_id: pulumi.Input[str], vswitch_ids: dict[str, pulumi.Output[str]],
               node_sg_id: pulumi.Input[str], key_id: pulumi.Input[str]) -> AlicloudSlurmHead:
    """The head node, its role, its security group and the munge key's secret parameter."""
    spec, resolved = scope.spec, scope.resolved
    refuse_elastic_without_power_program(resolved)
    runtime.warn_unconfirmed("scheduler.head_node", KEY_USE_UNCONFIRMED)
    name = slurm_base(scope)
    head = spec.scheduler.head_node or HeadNode()
    zone = head.zone or spec.network.zones[0]
    parameter = munge_parameter(scope, key_id)
    group = head_security_group(scope, vpc_id, node_sg_id)
    role = head_role(name, scope.base, spec.region, scope.tags, scope.child)
    # The first group's image: the lock keeps one per boot mode, and the catalog has no boot modes for CPU types.
    image, mode = resolved.group_image(resolved.groups[0]), resolved.group_boot_mode(resolved.groups[0])
    if mode is not None:
        runtime.warn_unconfirmed("scheduler.head_node.instance_type", (
            f"unconfirmed: the head node boots the cluster's {mode} image; the catalog lists no boot modes for "
            f"{head_node_type(resolved)} (system_types), so whether it boots {mode} is not read"))
    instance = alicloud.ecs.Instance(
        name,
        instance_name=name,
        image_id=image.id if image else None,
        instance_type=head_node_type(resolved),
        instance_charge_type="PostPaid",
        vswitch_id=vswitch_ids[zone],
        security_groups=[group.id],
        internet_max_bandwidth_out=0,
        role_name=role.role_name,
        http_endpoint="enabled",
        http_tokens="required",
        http_put_response_hop_limit=HEAD_METADATA_HOP_LIMIT,
        system_disk_category=DISK_CATEGORY,
        system_disk_size=head.disk_gb,
        system_disk_encrypted=True,
        system_disk_kms_key_id=key_id,
        user_data=head_user_data(resolved, munge_parameter_name(scope)),
        # The image's profile and status as the node groups carry them: the pack names an unbaked image by them.
        tags={**scope.tags, **ROLE_TAG, **(image_tags(spec.image, image) if image else {})},
        volume_tags={**scope.tags, **ROLE_TAG},
        # Its first boot reads the parameter: the parameter exists by then.
        opts=pulumi.ResourceOptions.merge(scope.child, pulumi.ResourceOptions(depends_on=[parameter])),
    )
    return AlicloudSlurmHead(address=instance.private_ip, parameter=munge_parameter_name(scope), role=role)


def grant_head_scaling(scope: ClusterScope, head: AlicloudSlurmHead, account_id: pulumi.Input[str],
                       key_id: pulumi.Input[str], group_ids: list[pulumi.Output[str]]) -> None:
    """The head role's policy: its munge key and the cluster's ESS scaling groups (the power programs' calls)."""
    grant_head(slurm_base(scope), scope.base, scope.spec.region, head.role, account_id, head.parameter, key_id,
               group_ids, scope.child)


def node_user_data(cluster: ResolvedCluster, group: ResolvedGroup, user_data: str, head_address: str,
                   parameter: str) -> str:
    """The group's cloud-config with the Slurm join after the node check (sent gzipped: nodegroup.py
    gzipped_user_data)."""
    files = node_join_files(group, head_site(), "alicloud", head_address,
                            _cloud_values(cluster.spec.region, parameter))
    return cloud_config_with(user_data, files, [JOIN_UNIT])


def join_user_data(cluster: ResolvedCluster, group: ResolvedGroup, user_data: pulumi.Input[str],
                   head: AlicloudSlurmHead | None) -> pulumi.Input[str]:
    """The group's user data, with the join once the head node's address is known (unchanged without Slurm)."""
    if head is None:
        return user_data
    if isinstance(user_data, str):
        # Rendered once with the longest address: an oversized user data is reported before any resource.
        gzip_user_data(node_user_data(cluster, group, user_data, LONGEST_ADDRESS, head.parameter), "alicloud",
                       f"node group {group.name} with the Slurm join", "use fewer instance types or zones")
    return pulumi.Output.all(user_data, head.address).apply(
        lambda v: node_user_data(cluster, group, v[0], v[1], head.parameter))


def build_slurm_head(scope: ClusterScope, vpc_id: pulumi.Input[str], vswitch_ids: dict[str, pulumi.Output[str]],
                     node_sg_id: pulumi.Input[str], key_id: pulumi.Input[str]) -> AlicloudSlurmHead | None:
    """scheduler slurm: the head node; None for any other scheduler."""
    if scope.spec.scheduler.kind != "slurm":
        return None
    if scope.spec.identity.ram_role_name:
        runtime.warn_unconfirmed("identity.ram_role_name", (
            f"the brought node role must allow oos:GetSecretParameter on the munge key's parameter "
            f"{munge_parameter_name(scope)} and kms:Decrypt on the stack key: gpufleet grants them only to the role "
            "it creates, and a node without them never joins Slurm"))
    return slurm_head(scope, vpc_id, vswitch_ids, node_sg_id, key_id)
