"""Every name the Azure components give a resource (the rest are autonamed by azure-native: the logical name and a
random suffix, cut by the provider only where the API spec declares a length), with Azure's rules. Checked against
every plan by tests/components/clouds/test_names.py."""

from __future__ import annotations

from ..naming import NameRule, NameTable, fit

# learn.microsoft.com/azure/azure-resource-manager/management/resource-name-rules ("Naming rules and restrictions
# for Azure resources"; MicrosoftDocs/azure-docs articles/azure-resource-manager/management/resource-name-rules.md).
RULES = "Naming rules and restrictions for Azure resources"
GROUP = "azure-native:resources:ResourceGroup"
VAULT = "azure-native:keyvault:Vault"
VMSS = "azure-native:compute:VirtualMachineScaleSet"
TEMPLATE = "azure-native:virtualmachineimages:VirtualMachineImageTemplate"
AKS = "azure-native:containerservice:ManagedCluster"
AGENT_POOL = "azure-native:containerservice:AgentPool"
DCR = "azure-native:monitor:DataCollectionRule"
GALLERY = "azure-native:compute:Gallery"
PROMETHEUS_RULES = "azure-native:alertsmanagement:PrometheusRuleGroup"
# learn.microsoft.com/azure/aks/create-node-pools (limitations): a pool name starts with a lower-case letter and holds
# lower-case letters and digits only; Linux pools 1-12 characters (Windows 1-6).
POOL_NAME = r"[a-z][a-z0-9]*"
NETWORK_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*[A-Za-z0-9_]"
NO_LIMIT = "no documented limit found (unconfirmed); unique inside its parent resource"
ANY = r"[\s\S]+"

NAMES = NameTable(
    [
        NameRule(GROUP, "resourceGroupName", 90, r"[A-Za-z0-9_().-]*[A-Za-z0-9_()-]", "subscription",
                 f"{RULES}, Microsoft.Resources resourcegroups: subscription, 1-90, alphanumerics, underscores, "
                 "parentheses, hyphens, periods; can't end with period"),
        NameRule(VAULT, "vaultName", 24, r"(?!.*--)[A-Za-z][A-Za-z0-9-]*[A-Za-z0-9]", "global",
                 f"{RULES}, Microsoft.KeyVault vaults: global, 3-24, alphanumerics and hyphens; start with letter, "
                 "end with letter or digit, no consecutive hyphens", min_len=3),
        NameRule("azure-native:keyvault:Key", "keyName", 127, r"[A-Za-z0-9-]+", "parent",
                 "Key Vault docs, About keys, secrets, and certificates: object names 1-127 alphanumerics and "
                 "dashes, unique in the vault"),
        NameRule(VMSS, "vmScaleSetName", 64, r'(?!_)[^\\/"\[\]:|<>+=;,?*@&]*[^\\/"\[\]:|<>+=;,?*@&.-]',
                 "resource group",
                 f"{RULES}, Microsoft.Compute virtualMachineScaleSets: resource group, 1-64 (Linux); can't use "
                 "\\/\"[]:|<>+=;,?*@&; can't start with underscore or end with period or hyphen"),
        NameRule(VMSS, "virtualMachineProfile.networkProfile.networkInterfaceConfigurations[].name", 80,
                 NETWORK_NAME, "parent", f"{RULES}, Microsoft.Network networkInterfaces: 1-80"),
        NameRule(VMSS, "virtualMachineProfile.networkProfile.networkInterfaceConfigurations[].ipConfigurations[]"
                 ".name", None, ANY, "parent", NO_LIMIT),
        NameRule(VMSS, "virtualMachineProfile.extensionProfile.extensions[].name", None, ANY, "parent", NO_LIMIT),
        NameRule("azure-native:network:NetworkSecurityGroup", "securityRules[].name", 80, NETWORK_NAME, "parent",
                 f"{RULES}, Microsoft.Network networkSecurityGroups / securityRules: 1-80, alphanumerics, "
                 "underscores, periods, hyphens; start with alphanumeric, end alphanumeric or underscore"),
        NameRule("azure-native:consumption:Budget", "budgetName", None, ANY, "resource group",
                 "Consumption Budgets REST API: no documented length or characters found (unconfirmed); the "
                 "budget's scope is the stack's resource group"),
        NameRule("azure-native:monitor:ActionGroup", "groupShortName", 12, ANY, "none",
                 "Azure Monitor action groups docs: the short name (SMS sender) is at most 12 characters; "
                 "characters unconfirmed"),
        NameRule("azure-native:monitor:ActionGroup", "emailReceivers[].name", None, ANY, "parent", NO_LIMIT),
        NameRule("azure-native:monitor:MetricAlert", "criteria.allOf[].name", None, ANY, "parent", NO_LIMIT),
        NameRule("azure-native:monitor:AutoscaleSetting", "profiles[].name", None, ANY, "parent", NO_LIMIT),
        NameRule(GALLERY, "galleryName", 80, r"[A-Za-z0-9][A-Za-z0-9_.]*[A-Za-z0-9]", "subscription",
                 f"{RULES}, Microsoft.Compute galleries: 1-80, alphanumerics, underscores and periods; start and end "
                 "with alphanumeric. Scope: 'Gallery names must be unique within your subscription' (azure-docs "
                 "articles/virtual-machines/create-gallery.md), wider than the table's 'resource group'"),
        NameRule("azure-native:compute:GalleryImage", "galleryImageName", 80, r"[A-Za-z0-9][A-Za-z0-9.-]*[A-Za-z0-9]",
                 "parent", f"{RULES}, Microsoft.Compute galleries / images: gallery, 1-80, alphanumerics, hyphens "
                 "and periods; start and end with alphanumeric"),
        NameRule("azure-native:authorization:RoleDefinition", "roleName", 512, ANY, "tenant",
                 "Azure RBAC docs, Azure custom roles: Name (roleName) at most 512 characters; a custom role's "
                 "name is unique in the Microsoft Entra directory (tenant)"),
        NameRule(AKS, "resourceName", 63, r"[A-Za-z0-9](?:[A-Za-z0-9_-]*[A-Za-z0-9])?", "resource group",
                 f"{RULES}, Microsoft.ContainerService managedClusters: resource group, 1-63, alphanumerics, "
                 "underscores and hyphens; start and end with alphanumeric"),
        NameRule(AKS, "dnsPrefix", 54, r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?", "none",
                 "AKS API reference, ManagedCluster dnsPrefix: 1-54, alphanumerics and hyphens, start and end "
                 "alphanumeric (unconfirmed against the page this session)"),
        NameRule(AKS, "agentPoolProfiles[].name", 12, POOL_NAME, "parent",
                 "AKS docs, create-node-pools: lower-case letters and digits, a letter first, Linux pools 1-12"),
        NameRule(AGENT_POOL, "agentPoolName", 12, POOL_NAME, "parent",
                 "AKS docs, create-node-pools: lower-case letters and digits, a letter first, Linux pools 1-12"),
        NameRule("azure-native:network:Subnet", "delegations[].name", None, ANY, "parent", NO_LIMIT),
        NameRule(TEMPLATE, "customize[].name", None, ANY, "parent", NO_LIMIT),
        NameRule(TEMPLATE, "validate.inVMValidations[].name", None, ANY, "parent", NO_LIMIT),
        NameRule(TEMPLATE, "distribute[].runOutputName", None, ANY, "parent", NO_LIMIT),
        NameRule(DCR, "dataSources.prometheusForwarder[].name", None, ANY, "parent", NO_LIMIT),
        NameRule(DCR, "destinations.monitoringAccounts[].name", None, ANY, "parent", NO_LIMIT),
        NameRule("azure-native:monitor:DataCollectionRuleAssociation", "associationName", None, ANY, "parent",
                 "Data Collection Rule Associations REST API: no documented length or characters found "
                 "(unconfirmed); unique on the resource it is associated with (the AKS cluster)"),
    ],
    {
        **{(f"azure-native:{typ}", "resourceGroupName"): "the stack's resource group (its own row)" for typ in (
            "compute:DiskEncryptionSet", "compute:Gallery", "compute:GalleryImage", "compute:VirtualMachineScaleSet",
            "keyvault:Key", "keyvault:Vault", "managedidentity:UserAssignedIdentity", "monitor:ActionGroup",
            "monitor:AutoscaleSetting", "monitor:MetricAlert", "network:NatGateway", "network:NetworkSecurityGroup",
            "network:PublicIPAddress", "network:Subnet", "network:VirtualNetwork", "storagecache:AmlFilesystem",
            "virtualmachineimages:VirtualMachineImageTemplate", "containerservice:ManagedCluster",
            "containerservice:AgentPool", "monitor:AzureMonitorWorkspace", "monitor:DataCollectionEndpoint",
            "monitor:DataCollectionRule", "alertsmanagement:PrometheusRuleGroup", "eventgrid:SystemTopic",
            "eventgrid:SystemTopicEventSubscription",
        )},
        ("azure-native:eventgrid:SystemTopicEventSubscription", "systemTopicName"): "the system topic's (autonamed) "
                                                                                    "name",
        (PROMETHEUS_RULES, "clusterName"): "the AKS cluster's name (its own row), which the rules filter by",
        (AGENT_POOL, "resourceName"): "the AKS cluster's name (its own row)",
        (AGENT_POOL, "vmSize"): "a VM size",
        (AKS, "agentPoolProfiles[].vmSize"): "a VM size",
        (AKS, "sku.name"): "an AKS SKU (Base)",
        ("azure-native:network:Subnet", "delegations[].serviceName"): "the Azure service the subnet is delegated to",
        ("azure-native:keyvault:Key", "vaultName"): "the vault's name (its own row)",
        ("azure-native:compute:GalleryImage", "galleryName"): "the gallery's name (its own row)",
        ("azure-native:network:Subnet", "virtualNetworkName"): "the virtual network's (autonamed) name",
        (VMSS, "sku.name"): "a VM size",
        (VMSS, "virtualMachineProfile.osProfile.adminUsername"): "the nodes' OS account, not a resource",
        ("azure-native:keyvault:Vault", "properties.sku.name"): "a Key Vault SKU",
        ("azure-native:network:NatGateway", "sku.name"): "a NAT gateway SKU",
        ("azure-native:network:PublicIPAddress", "sku.name"): "a public IP SKU",
        ("azure-native:storagecache:AmlFilesystem", "sku.name"): "a Managed Lustre throughput tier",
        ("azure-native:monitor:MetricAlert", "criteria.allOf[].metricName"): "a metric the nodes or Azure publish",
        ("azure-native:monitor:AutoscaleSetting", "profiles[].rules[].metricTrigger.metricName"): "a published metric",
        (TEMPLATE, "distribute[].targetRegions[].name"): "an Azure region",
    },
)


def resource_group_name(cluster: str, environment: str, region: str, brought: str | None = None) -> str:
    """The cluster's resource group: the brought one, else gpufleet-<name>-<environment> made unique in the
    subscription over every region (the region's hash keeps one name in two regions apart)."""
    return brought or fit(f"gpufleet-{cluster}-{environment}", NAMES.limit(GROUP, "resourceGroupName"), region)


def aks_cluster_name(cluster: str, environment: str) -> str:
    """The AKS cluster's name in its resource group."""
    return f"gpufleet-{cluster}-{environment}"
