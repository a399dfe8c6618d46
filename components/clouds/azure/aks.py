"""The AKS control plane of a `scheduler: kubernetes` Azure cluster: its user-assigned identity with the roles AKS
needs (waited for like every Azure role, storage.RBAC_PROPAGATION), the KMS key for secrets, the subnet the API server
is projected into, and the ManagedCluster itself with its small system pool.

Sources (learn.microsoft.com/azure/aks; MicrosoftDocs/azure-aks-docs articles/aks/<page>.md):
- use-kms-etcd-encryption (@00435f9): KMS "doesn't work with system-assigned managed identity"; with an RBAC vault the
  identity holds Key Vault Crypto User (decrypt and encrypt) and, for a private key vault, Key Vault Contributor "to
  create a private link between the private key vault and the cluster"; a private key vault needs API Server VNet
  Integration; a vault firewall open to chosen networks or IPs blocks the plugin in public mode; the vault mode cannot
  change while KMS is on; after a key rotation both versions must stay valid until the next one, and every secret is
  rewritten (`kubectl get secrets --all-namespaces -o json | kubectl replace -f -`).
- api-server-vnet-integration: the API server behind an internal load balancer in a subnet delegated to
  Microsoft.ContainerService/managedClusters, at least a /28; the cluster identity needs Network Contributor on it.
- azure-disk-customer-managed-keys: node OS disks on a disk encryption set only from cluster creation; the cluster
  identity reads the DES (Reader).
- managed-azure-ad / manage-azure-rbac: local accounts off with Entra ID and Azure RBAC for Kubernetes.
- use-system-pools (@fb060ab): system pools "must contain at least two nodes" (three recommended in production) of at
  least 4 vCPUs; the CriticalAddonsOnly=true:NoSchedule taint is optional, what keeps application pods off a system
  pool. gpufleet leaves it off: this pool is the cluster's system group (scheduler.system_group), where the operators,
  the autoscaler and job launchers run beside CoreDNS, so no pod waits on a GPU node. GPU pools keep
  nvidia.com/gpu=present:NoSchedule.
- azure-disk-customer-managed-keys and api-server-vnet-integration read at the same commit: "The AKS cluster identity
  needs Reader access to the DiskEncryptionSet"; Network Contributor on the API server and cluster subnets.
The KMS plugin encrypts and decrypts with the key (Azure/kubernetes-kms pkg/plugin/keyvault.go: baseClient.Encrypt /
Decrypt): the stack's disk key admits only wrapKey/unwrapKey, so KMS gets its own key in the stack's vault.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from ipaddress import IPv4Network

import pulumi
from pulumi_azure_native import authorization, containerservice, keyvault, managedidentity, network
from pulumiverse_time import Sleep

from gpufleet.stackfile.scheduler import SYSTEM_GROUP_NAME, SYSTEM_NODE_LABELS

from .aks_autoscaler import DEFAULT_UNNEEDED_MINUTES, autoscaler_profile
from .aks_monitoring import metrics_profile
from .storage import KEY_EXPIRES_AFTER, KEY_SIZE, RBAC_PROPAGATION, ROTATE_AFTER, role_definition_id

# Built-in role ids (learn.microsoft.com/azure/role-based-access-control/built-in-roles).
KEY_VAULT_CRYPTO_USER = "12338af0-0e69-4776-bea7-d2b8c9d0c5fe"
KEY_VAULT_CONTRIBUTOR = "f25e0fa2-a7c8-4377-a976-54943a77a395"
NETWORK_CONTRIBUTOR = "4d97b98b-1d4f-4787-a291-c67834d212e7"
READER = "acdd72a7-3385-48ef-bd42-f606fba81ae7"
APISERVER_DELEGATION = "Microsoft.ContainerService/managedClusters"
APISERVER_PREFIX = 28
SYSTEM_POOL = SYSTEM_GROUP_NAME
# Set only when the cluster is made: a change means a new cluster (azure-disk-customer-managed-keys; the pool fields
# are the system pool's VM size and zones, fixed per pool like every agent pool's).
CLUSTER_CREATION_ONLY = ["diskEncryptionSetID", "apiServerAccessProfile.enableVnetIntegration",
                         "apiServerAccessProfile.subnetId", "networkProfile.networkPlugin"]


def apiserver_subnet_cidr(cidr: IPv4Network) -> IPv4Network:
    """The API server's subnet in a VNet gpufleet creates: its last /28, in the half the node subnet leaves free."""
    return list(cidr.subnets(new_prefix=APISERVER_PREFIX))[-1]


@dataclass(frozen=True)
class AksArgs:
    """Inputs of the AKS control plane."""

    cluster_name: str
    version: str
    resource_group_name: pulumi.Input[str]
    location: str
    zones: list[str]
    subscription_id: pulumi.Input[str]
    node_subnet_id: pulumi.Input[str]
    vnet_name: pulumi.Input[str]
    vnet_cidr: IPv4Network
    disk_encryption_set_id: pulumi.Input[str]
    vault_id: pulumi.Input[str]
    vault_name: pulumi.Input[str] | None
    """The created vault, where the KMS key goes; None with a brought key (then brought_key_url is KMS's key)."""
    brought_key_url: str | None
    encryption_at_host: bool
    system_vm_size: str
    """scheduler.system_group: the system pool's size (the catalog's system_types) and node counts."""
    system_min: int
    system_max: int
    public_cidrs: list[str] = field(default_factory=list)
    """Ranges the public API server answers; empty: a private cluster."""
    protect: bool = False
    """prod: the cluster and the KMS key are protected in Pulumi."""
    prometheus: bool = False
    """The managed Prometheus add-on (monitoring.gpu_metrics): aks_monitoring.py."""
    idle_minutes: int = DEFAULT_UNNEEDED_MINUTES
    """The cluster autoscaler's scale-down-unneeded-time (aks_autoscaler.py)."""
    standard_tier: bool = False
    """The Standard tier (API server uptime SLA, control plane scaled with load), else Free."""
    tags: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Aks:
    """The cluster and what the pools and the in-cluster layer need."""

    cluster: containerservice.ManagedCluster
    identity: managedidentity.UserAssignedIdentity
    kms_key_url: pulumi.Output[str]


def kms_key(name: str, args: AksArgs, opts: pulumi.ResourceOptions) -> tuple[pulumi.Output[str], pulumi.Input[str]]:
    """KMS's key (its versioned URL) and the scope its role goes on: a key in the stack's vault, or the brought one.
    It rotates like the disk key, but the cluster names one version: after a rotation, `pulumi refresh` then `pulumi
    up` moves KMS to the new version (an update AKS allows) and the secrets are rewritten, within the year before the
    old version expires (each expires a year after its successor: both valid until the next rotation)."""
    if args.vault_name is None:
        url = args.brought_key_url or ""
        return pulumi.Output.from_input(url), pulumi.Output.concat(
            args.vault_id, "/keys/", url.split("/keys/", 1)[1].split("/")[0])
    key = keyvault.Key(
        f"{name}-kms",
        key_name="gpufleet-kms",
        vault_name=args.vault_name,
        resource_group_name=args.resource_group_name,
        properties=keyvault.KeyPropertiesArgs(
            kty="RSA", key_size=KEY_SIZE, key_ops=["encrypt", "decrypt"],
            rotation_policy=keyvault.RotationPolicyArgs(
                attributes=keyvault.KeyRotationPolicyAttributesArgs(expiry_time=KEY_EXPIRES_AFTER),
                lifetime_actions=[keyvault.LifetimeActionArgs(
                    trigger=keyvault.TriggerArgs(time_after_create=ROTATE_AFTER),
                    action=keyvault.ActionArgs(type="rotate"))],
            ),
        ),
        tags=args.tags,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(protect=args.protect)),
    )
    return key.key_uri_with_version, key.id


def apiserver_subnet(name: str, args: AksArgs, opts: pulumi.ResourceOptions) -> network.Subnet:
    """The subnet the API server's internal load balancer goes in, delegated to AKS."""
    return network.Subnet(
        f"{name}-apiserver",
        resource_group_name=args.resource_group_name,
        # After the node subnet: ARM writes a VNet's subnets through the VNet, and two writes at once may conflict
        # (a precaution, not confirmed from a source).
        virtual_network_name=pulumi.Output.all(args.vnet_name, args.node_subnet_id).apply(lambda names: names[0]),
        address_prefix=str(apiserver_subnet_cidr(args.vnet_cidr)),
        delegations=[network.DelegationArgs(name="aks-apiserver", service_name=APISERVER_DELEGATION)],
        opts=opts,
    )


def cluster_identity(name: str, args: AksArgs, grants: dict[str, tuple[pulumi.Input[str], str]],
                     opts: pulumi.ResourceOptions) -> tuple[managedidentity.UserAssignedIdentity, Sleep]:
    """The cluster's identity, its roles (label -> (scope, role id)) and the wait until ARM enforces them."""
    identity = managedidentity.UserAssignedIdentity(
        f"{name}-aks", resource_group_name=args.resource_group_name, location=args.location, tags=args.tags,
        opts=opts)
    assignments = [
        authorization.RoleAssignment(
            f"{name}-aks-{label}",
            scope=scope,
            principal_id=identity.principal_id,
            principal_type="ServicePrincipal",
            role_definition_id=role_definition_id(args.subscription_id, role),
            description=f"the AKS cluster identity: {label}",
            opts=opts,
        )
        for label, (scope, role) in grants.items()
    ]
    wait = Sleep(
        f"{name}-aks-roles-propagated",
        create_duration=RBAC_PROPAGATION,
        triggers={label: a.id for label, a in zip(grants, assignments, strict=True)},
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=assignments)),
    )
    return identity, wait


def control_plane(name: str, args: AksArgs, opts: pulumi.ResourceOptions) -> Aks:
    """The identity with its roles, the KMS key, the API server subnet and the cluster waiting for all of them."""
    key_url, key_scope = kms_key(name, args, opts)
    subnet = apiserver_subnet(name, args, opts)
    identity, roles = cluster_identity(name, args, {
        "kms-key": (key_scope, KEY_VAULT_CRYPTO_USER),
        "kms-vault": (args.vault_id, KEY_VAULT_CONTRIBUTOR),
        "des": (args.disk_encryption_set_id, READER),
        "node-subnet": (args.node_subnet_id, NETWORK_CONTRIBUTOR),
        "apiserver-subnet": (subnet.id, NETWORK_CONTRIBUTOR),
    }, opts)
    cluster = containerservice.ManagedCluster(
        f"{name}-aks",
        resource_name_=args.cluster_name,
        resource_group_name=args.resource_group_name,
        location=args.location,
        dns_prefix=args.cluster_name,
        kubernetes_version=args.version,
        sku=containerservice.ManagedClusterSKUArgs(name="Base", tier="Standard" if args.standard_tier else "Free"),
        identity=containerservice.ManagedClusterIdentityArgs(
            type="UserAssigned", user_assigned_identities=[identity.id]),
        disk_encryption_set_id=args.disk_encryption_set_id,
        security_profile=_security(args, key_url),
        api_server_access_profile=containerservice.ManagedClusterAPIServerAccessProfileArgs(
            enable_private_cluster=not args.public_cidrs,
            authorized_ip_ranges=args.public_cidrs or None,
            enable_vnet_integration=True,
            subnet_id=subnet.id,
        ),
        enable_rbac=True,
        disable_local_accounts=True,
        aad_profile=containerservice.ManagedClusterAADProfileArgs(managed=True, enable_azure_rbac=True),
        oidc_issuer_profile=containerservice.ManagedClusterOIDCIssuerProfileArgs(enabled=True),
        network_profile=containerservice.ContainerServiceNetworkProfileArgs(
            network_plugin="azure",
            load_balancer_sku="standard",
            # The created node subnet reaches the internet through its NAT gateway (network.py): AKS keeps it
            # (aks nat-gateway docs, "user-assigned NAT gateway": outbound type userAssignedNATGateway).
            outbound_type="userAssignedNATGateway",
        ),
        agent_pool_profiles=[system_pool(args)],
        auto_scaler_profile=autoscaler_profile(args.idle_minutes),
        azure_monitor_profile=metrics_profile() if args.prometheus else None,
        tags=args.tags,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
            depends_on=[roles], protect=args.protect, replace_on_changes=CLUSTER_CREATION_ONLY,
            # The autoscaler and AKS own the system pool's count once it runs.
            ignore_changes=["agentPoolProfiles[0].count"])),
    )
    return Aks(cluster, identity, key_url)


def _security(args: AksArgs, key_url: pulumi.Input[str]) -> containerservice.ManagedClusterSecurityProfileArgs:
    """KMS on the key through the stack's vault, which denies public networks (storage.py): a private vault for
    AKS, reached over the API server's VNet integration; workload identity for the components that call Azure."""
    return containerservice.ManagedClusterSecurityProfileArgs(
        azure_key_vault_kms=containerservice.AzureKeyVaultKmsArgs(
            enabled=True, key_id=key_url, key_vault_network_access="Private", key_vault_resource_id=args.vault_id),
        workload_identity=containerservice.ManagedClusterSecurityProfileWorkloadIdentityArgs(enabled=True),
    )


def system_pool(args: AksArgs) -> containerservice.ManagedClusterAgentPoolProfileArgs:
    """The untainted Regular-priority pool CoreDNS, the operators, the autoscaler and job launchers run on, apart
    from the GPU pools; the cluster autoscaler scales it between the system group's min and max."""
    return containerservice.ManagedClusterAgentPoolProfileArgs(
        name=SYSTEM_POOL,
        mode="System",
        type="VirtualMachineScaleSets",
        vm_size=args.system_vm_size,
        count=args.system_min,
        enable_auto_scaling=True,
        min_count=args.system_min,
        max_count=args.system_max,
        availability_zones=args.zones or None,
        vnet_subnet_id=args.node_subnet_id,
        node_labels=SYSTEM_NODE_LABELS,
        os_type="Linux",
        os_sku="Ubuntu",
        enable_encryption_at_host=args.encryption_at_host,
        enable_node_public_ip=False,
    )
