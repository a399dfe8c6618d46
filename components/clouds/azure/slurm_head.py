"""scheduler slurm on Azure: the head node slurmctld runs on, its network security group, and what the node groups add
to join it (the same shape as components/clouds/aws/slurm_head.py).

- The head node: an on-demand VM of the cluster's baked image (Slurm, munge, pyxis, enroot) in the cluster's subnet,
  no public IP, its OS disk on the stack's disk encryption set, reached as the nodes are (SSH from network.admin_cidrs,
  Bastion, serial console). Its custom data (gzipped cloud-config) carries components.slurm.head_files' files and
  Azure's part of the scripts (scripts/slurm-azure.sh).
- Its NIC's security group admits slurmctld and srun's ports from the nodes' application security group only (every
  scale set's VMs are in it) and lets the head reach the nodes' slurmd; nothing else inbound but SSH from the VNet
  (Azure Bastion) and the admin networks.
- The munge key is a secret in the stack's vault that Pulumi never writes: the head node makes the key at its first
  boot and sets it through Key Vault's REST API with its identity's token (scripts/slurm-head.sh), so the key never is
  in Pulumi state. Roles: slurm_identity.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pulumi
from pulumi_azure_native import compute, network

from components import runtime
from components.bootstrap.added_files import cloud_config_with
from components.bootstrap.cloud_init import user_data_limit
from components.bootstrap.errors import BootstrapError
from components.slurm.head_files import cloud_head_config, head_site, packed_head_user_data
from components.slurm.node_files import JOIN_UNIT, node_join_files
from components.slurm.power_units import refuse_elastic_without_power_program
from components.slurm.site import SLURMCTLD_PORT, SLURMD_PORT, SRUN_PORTS
from gpufleet.clouds.naming import stack_base
from gpufleet.stackfile.slurm import HeadNode
from gpufleet.stackfile.slurm_checks import head_node_type

from .nodegroup import ADMIN_USER, admin_linux_configuration
from .security import ADMIN_PRIORITY, DENY_INTERNET_PRIORITY
from .slurm_identity import MUNGE_SECRET_NAME, HeadIdentity, grant_nodes_munge_key, head_identity, munge_secret

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster, ResolvedGroup

    from ..scope import ClusterScope
    from .cluster_parts import Client, ClusterResourceGroup, NodeIdentity
    from .network import AzureNetwork
    from .storage import AzureDiskEncryption

ROLE_TAG = {"gpufleet:role": "slurm-head"}
# Rule priorities: the Slurm rules before the admin SSH rules (ADMIN_PRIORITY and up), the deny last.
SLURM_PRIORITY = 90
VAULT_NAME_MAX = 24  # Key Vault names: 3 to 24 characters (names.py NAMES, vaultName)
# The longest IPv4 address (the file system's MGS, the head node's): rendering with it first reports an oversized
# user data before any resource.
LONGEST_ADDRESS = "255.255.255.255"


def slurm_base(scope: ClusterScope) -> str:
    """`<cluster>-<environment>-slurm-head`: the head node's name and its resources' prefix."""
    return f"{stack_base(scope.spec.name, scope.spec.environment)}-slurm-head"


def nodes_security_group(scope: ClusterScope, group_name: pulumi.Input[str]) -> network.ApplicationSecurityGroup:
    """The application security group every scale set's VMs join: the source the head node's rules admit."""
    return network.ApplicationSecurityGroup(
        f"{stack_base(scope.spec.name, scope.spec.environment)}-slurm-nodes", resource_group_name=group_name,
        location=scope.spec.region, tags=scope.tags, opts=scope.child)


def _rule(name: str, priority: int, direction: str, ports: str, description: str, **ends: object
          ) -> network.SecurityRuleArgs:
    return network.SecurityRuleArgs(
        name=name, priority=priority, direction=direction, access="Allow", protocol="Tcp", source_port_range="*",
        destination_port_range=ports, description=description, **ends)


def head_security_rules(nodes_asg_id: pulumi.Input[str], admin_cidrs: list[str]) -> list[network.SecurityRuleArgs]:
    """slurmctld and srun's ports from the nodes, slurmd on the nodes, SSH from the VNet (Bastion) and the admin
    networks, nothing else in."""
    nodes = [network.ApplicationSecurityGroupArgs(id=nodes_asg_id)]
    low, high = SRUN_PORTS
    rules = [
        _rule("slurmctld-from-nodes", SLURM_PRIORITY, "Inbound", str(SLURMCTLD_PORT), "slurmctld from the GPU nodes",
              source_application_security_groups=nodes, destination_address_prefix="*"),
        _rule("srun-from-nodes", SLURM_PRIORITY + 1, "Inbound", f"{low}-{high}", "srun's ports from the GPU nodes",
              source_application_security_groups=nodes, destination_address_prefix="*"),
        _rule("slurmd-to-nodes", SLURM_PRIORITY, "Outbound", str(SLURMD_PORT), "slurmd on the GPU nodes",
              source_address_prefix="*", destination_application_security_groups=nodes),
        # Azure Bastion reaches a VM's SSH from its own subnet in the VNet (or a peered one), as it reaches the nodes
        # under Azure's default AllowVnetInBound, which the deny below overrides for the head node.
        _rule("ssh-from-vnet", SLURM_PRIORITY + 2, "Inbound", "22", "SSH from the virtual network (Azure Bastion)",
              source_address_prefix="VirtualNetwork", destination_address_prefix="*"),
        *(_rule(f"ssh-admin-{index}", ADMIN_PRIORITY + index, "Inbound", "22", "SSH from an admin network",
                source_address_prefix=cidr, destination_address_prefix="*")
          for index, cidr in enumerate(admin_cidrs)),
    ]
    # Azure's default rules admit the whole VNet (AllowVnetInBound); this deny leaves the rules above the only way in.
    rules.append(network.SecurityRuleArgs(
        name="deny-other-inbound", description="nothing else reaches the Slurm head node",
        priority=DENY_INTERNET_PRIORITY, direction="Inbound", access="Deny", protocol="*", source_address_prefix="*",
        source_port_range="*", destination_address_prefix="*", destination_port_range="*"))
    return rules


def _cloud_values(vault_name: str) -> dict[str, str]:
    """The settings scripts/slurm-azure.sh reads on the head node."""
    return {"GPUFLEET_KEY_VAULT": vault_name, "GPUFLEET_MUNGE_SECRET": MUNGE_SECRET_NAME}


def head_cloud_config(cluster: ResolvedCluster, vault_name: str) -> str:
    """The head node's cloud-config: the neutral files, its settings and Azure's part of the scripts."""
    return cloud_head_config(cluster, "azure", _cloud_values(vault_name))


def head_custom_data(cluster: ResolvedCluster, vault_name: str) -> str:
    """The head node's custom data, gzipped and base64 as osProfile.customData takes it."""
    return packed_head_user_data(cluster, "azure", _cloud_values(vault_name))


@dataclass(frozen=True)
class SlurmHead:
    """What a Slurm cluster's nodes join with, and the head's identity (its scaling role goes on the scale sets)."""

    address: pulumi.Output[str]
    """The head node's private address, slurmctld's."""
    vault_name: pulumi.Output[str]
    nodes_asg_id: pulumi.Output[str]
    identity: HeadIdentity


@dataclass(frozen=True)
class HeadPlace:
    """Where the head node goes and what it uses of the cluster's."""

    group_name: pulumi.Output[str]
    group_id: pulumi.Output[str]
    subnet_id: pulumi.Output[str]
    munge_secret_id: pulumi.Output[str]
    vault_name: pulumi.Output[str]
    disk_encryption_set_id: pulumi.Output[str]
    waits: list[pulumi.Resource]
    """What the head's create waits for: the disk key's role, the nodes' munge key role."""


def slurm_head(scope: ClusterScope, place: HeadPlace, image: compute.ImageReferenceArgs | None) -> SlurmHead:
    """The head node, its identity, its NIC and the NIC's security group."""
    spec, resolved = scope.spec, scope.resolved
    refuse_elastic_without_power_program(resolved)
    name = slurm_base(scope)
    head = spec.scheduler.head_node or HeadNode()
    zone = head.zone or (spec.network.zones[0] if spec.network.zones else None)
    common = {"resource_group_name": place.group_name, "location": spec.region, "tags": scope.tags}
    identity = head_identity(name, place.group_name, place.group_id, spec.region, place.munge_secret_id, scope.tags,
                             scope.child)
    nodes_asg = nodes_security_group(scope, place.group_name)
    nsg = network.NetworkSecurityGroup(
        name, security_rules=head_security_rules(nodes_asg.id, [str(c) for c in spec.network.admin_cidrs]), **common,
        opts=scope.child)
    nic = network.NetworkInterface(
        name,
        # No public_ip_address: the head node is private; it reaches Key Vault and ARM through the NAT gateway.
        ip_configurations=[network.NetworkInterfaceIPConfigurationArgs(
            name="ipconfig", primary=True, private_ip_allocation_method="Dynamic",
            subnet=network.SubnetArgs(id=place.subnet_id))],
        network_security_group=network.NetworkSecurityGroupArgs(id=nsg.id),
        **common, opts=scope.child)
    # Rendered once with a vault name of the longest form: a custom data over Azure's cap is reported before any
    # resource, not from inside the engine.
    head_custom_data(resolved, "v" * VAULT_NAME_MAX)
    compute.VirtualMachine(
        name,
        vm_name=name,
        hardware_profile=compute.HardwareProfileArgs(vm_size=head_node_type(resolved)),
        storage_profile=compute.StorageProfileArgs(
            image_reference=image,
            os_disk=compute.OSDiskArgs(
                create_option="FromImage", os_type="Linux", caching="ReadWrite", disk_size_gb=head.disk_gb,
                delete_option="Delete",
                managed_disk=compute.ManagedDiskParametersArgs(
                    storage_account_type="Premium_LRS",
                    disk_encryption_set=compute.DiskEncryptionSetParametersArgs(id=place.disk_encryption_set_id)))),
        network_profile=compute.NetworkProfileArgs(
            network_interfaces=[compute.NetworkInterfaceReferenceArgs(id=nic.id, primary=True)]),
        os_profile=compute.OSProfileArgs(
            computer_name=name[:64], admin_username=ADMIN_USER,
            custom_data=place.vault_name.apply(lambda vault: head_custom_data(resolved, vault)),
            linux_configuration=admin_linux_configuration(spec.admin_ssh_public_key)),
        security_profile=compute.SecurityProfileArgs(encryption_at_host=spec.storage.encryption_at_host),
        identity=compute.VirtualMachineIdentityArgs(type="UserAssigned",
                                                    user_assigned_identities=[identity.identity.id]),
        zones=[zone] if zone else None,
        **{**common, "tags": {**scope.tags, **ROLE_TAG}},
        # Its first boot stores the munge key: the identity's role has propagated by then.
        opts=pulumi.ResourceOptions.merge(scope.child, pulumi.ResourceOptions(
            depends_on=[identity.munge_key_ready, *place.waits])),
    )
    address = nic.ip_configurations.apply(lambda configs: configs[0].private_ip_address if configs else None)
    return SlurmHead(address=address, vault_name=place.vault_name, nodes_asg_id=nodes_asg.id, identity=identity)


def munge_vault_usable(scope: ClusterScope) -> bool:
    """Whether the stack's vault can keep the munge key: the one gpufleet creates (Azure RBAC, the node subnet
    admitted). A brought key's vault (its authorisation model and network rules are its owner's) is refused."""
    if scope.spec.storage.kms_key == "create":
        return True
    runtime.refuse("storage.kms_key", (
        "scheduler slurm on Azure keeps the munge key in the vault gpufleet creates (Azure RBAC, the node subnet "
        "admitted); a brought key's vault is not set up for it: use kms_key: create with slurm"))
    return False


def node_user_data(cluster: ResolvedCluster, group: ResolvedGroup, user_data: str, head_address: str,
                   vault_name: str) -> str:
    """The group's cloud-config with the Slurm join after the node check, within Azure's custom data cap."""
    mode = "Uniform" if group.rdma else "Flexible"  # nodegroup.py: an InfiniBand group is a Uniform scale set
    files = node_join_files(group, head_site(), "azure", head_address,
                            {**_cloud_values(vault_name), "GPUFLEET_SCALE_SET_MODE": mode})
    text = cloud_config_with(user_data, files, [JOIN_UNIT])
    size, limit = len(text.encode()), user_data_limit("azure")
    if size > limit:
        raise BootstrapError(f"user data: {size} bytes is over azure's {limit}-byte user data limit (node group "
                             f"{group.name} with the Slurm join); use fewer instance types or zones")
    return text


def join_user_data(cluster: ResolvedCluster, group: ResolvedGroup, user_data: pulumi.Input[str],
                   head: SlurmHead | None) -> pulumi.Input[str]:
    """The group's user data, with the join once the head node's address is known (unchanged without Slurm)."""
    if head is None:
        return user_data
    if isinstance(user_data, str):
        # Rendered once with the longest address and vault name: a custom data over Azure's cap is reported before
        # any resource, not from inside the engine.
        node_user_data(cluster, group, user_data, LONGEST_ADDRESS, "v" * VAULT_NAME_MAX)
    return pulumi.Output.all(user_data, head.address, head.vault_name).apply(
        lambda v: node_user_data(cluster, group, v[0], v[1], v[2]))


def build_slurm_head(scope: ClusterScope, group: ClusterResourceGroup, network: AzureNetwork,
                     encryption: AzureDiskEncryption, nodes: NodeIdentity, client: Client,
                     image: compute.ImageReferenceArgs | None) -> SlurmHead | None:
    """scheduler slurm: the nodes' read of the munge key and the head node; None for any other scheduler (or a
    refused brought vault)."""
    if scope.spec.scheduler.kind != "slurm" or not munge_vault_usable(scope) or encryption.vault_name is None:
        return None
    if scope.spec.network.subnet_id:
        runtime.warn_unconfirmed("network.subnet_id", (
            "the brought node subnet must have Key Vault's service endpoint (Microsoft.KeyVault), which gpufleet adds "
            "only to a subnet it creates: without it the vault's subnet rule is refused and the head node and nodes "
            "cannot reach the munge key"))
    secret = munge_secret(slurm_base(scope), group.name, encryption.vault_name, scope.child)
    nodes_read = grant_nodes_munge_key(slurm_base(scope), secret.id, nodes.principal_id, client.subscription_id,
                                       scope.child)
    place = HeadPlace(group.name, group.id, network.subnet_id, secret.id, encryption.vault_name,
                      encryption.disk_encryption_set_id, [encryption.key_access, nodes_read])
    return slurm_head(scope, place, image)
