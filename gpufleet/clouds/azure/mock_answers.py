"""What the offline engine answers in place of Azure: ARM resource ids, names and invokes in Azure's shapes.

Ids are `/subscriptions/S/resourceGroups/RG/providers/NAMESPACE/TYPE/NAME` with S the stand-in subscription
below and RG the resource's own resourceGroupName input; a child resource (subnet, key) sits under its
parent's name. Unnamed resources get the name Pulumi's autonaming would give: the logical name and a suffix
derived from type and name, so two plans of one stack are identical. Computed values nobody can know
offline (public IP addresses, key material) are left out, never made up.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from ..mock_ids import Outputs, digest, guid

# The offline engine's stand-in subscription and tenant (GUIDs, as Azure writes them).
SUBSCRIPTION = "11111111-1111-4111-8111-111111111111"
TENANT = "22222222-2222-4222-8222-222222222222"
CLIENT = "33333333-3333-4333-8333-333333333333"

# Resource type token: (ARM path under the provider, with {input} for a parent's name; the name input).
ARM_PATHS: dict[str, tuple[str, str]] = {
    "azure-native:network:VirtualNetwork": ("Microsoft.Network/virtualNetworks", "virtualNetworkName"),
    "azure-native:network:Subnet": (
        "Microsoft.Network/virtualNetworks/{virtualNetworkName}/subnets", "subnetName"),
    "azure-native:network:PublicIPAddress": ("Microsoft.Network/publicIPAddresses", "publicIpAddressName"),
    "azure-native:network:NatGateway": ("Microsoft.Network/natGateways", "natGatewayName"),
    "azure-native:network:NetworkSecurityGroup": (
        "Microsoft.Network/networkSecurityGroups", "networkSecurityGroupName"),
    "azure-native:network:ApplicationSecurityGroup": (
        "Microsoft.Network/applicationSecurityGroups", "applicationSecurityGroupName"),
    "azure-native:network:NetworkInterface": ("Microsoft.Network/networkInterfaces", "networkInterfaceName"),
    "azure-native:compute:VirtualMachine": ("Microsoft.Compute/virtualMachines", "vmName"),
    "azure-native:keyvault:Vault": ("Microsoft.KeyVault/vaults", "vaultName"),
    "azure-native:keyvault:Key": ("Microsoft.KeyVault/vaults/{vaultName}/keys", "keyName"),
    "azure-native:keyvault:Secret": ("Microsoft.KeyVault/vaults/{vaultName}/secrets", "secretName"),
    "azure-native:compute:DiskEncryptionSet": ("Microsoft.Compute/diskEncryptionSets", "diskEncryptionSetName"),
    "azure-native:compute:VirtualMachineScaleSet": ("Microsoft.Compute/virtualMachineScaleSets", "vmScaleSetName"),
    "azure-native:compute:CapacityReservationGroup": (
        "Microsoft.Compute/capacityReservationGroups", "capacityReservationGroupName"),
    "azure-native:compute:Gallery": ("Microsoft.Compute/galleries", "galleryName"),
    "azure-native:compute:GalleryImage": ("Microsoft.Compute/galleries/{galleryName}/images", "galleryImageName"),
    "azure-native:managedidentity:UserAssignedIdentity": (
        "Microsoft.ManagedIdentity/userAssignedIdentities", "resourceName"),
    "azure-native:monitor:AutoscaleSetting": ("Microsoft.Insights/autoscalesettings", "autoscaleSettingName"),
    "azure-native:virtualmachineimages:VirtualMachineImageTemplate": (
        "Microsoft.VirtualMachineImages/imageTemplates", "imageTemplateName"),
    "azure-native:monitor:ActionGroup": ("Microsoft.Insights/actionGroups", "actionGroupName"),
    "azure-native:monitor:MetricAlert": ("Microsoft.Insights/metricAlerts", "ruleName"),
    "azure-native:storagecache:AmlFilesystem": ("Microsoft.StorageCache/amlFilesystems", "amlFilesystemName"),
    "azure-native:containerservice:ManagedCluster": ("Microsoft.ContainerService/managedClusters", "resourceName"),
    "azure-native:containerservice:AgentPool": (
        "Microsoft.ContainerService/managedClusters/{resourceName}/agentPools", "agentPoolName"),
    "azure-native:monitor:AzureMonitorWorkspace": ("Microsoft.Monitor/accounts", "azureMonitorWorkspaceName"),
    "azure-native:monitor:DataCollectionEndpoint": (
        "Microsoft.Insights/dataCollectionEndpoints", "dataCollectionEndpointName"),
    "azure-native:monitor:DataCollectionRule": ("Microsoft.Insights/dataCollectionRules", "dataCollectionRuleName"),
    "azure-native:alertsmanagement:PrometheusRuleGroup": (
        "Microsoft.AlertsManagement/prometheusRuleGroups", "ruleGroupName"),
    "azure-native:eventgrid:SystemTopic": ("Microsoft.EventGrid/systemTopics", "systemTopicName"),
    "azure-native:eventgrid:SystemTopicEventSubscription": (
        "Microsoft.EventGrid/systemTopics/{systemTopicName}/eventSubscriptions", "eventSubscriptionName"),
}

# Stand-in for the API server's private FQDN, which AKS assigns at creation: a name under the reserved .invalid
# top-level domain (RFC 2606), so the offline kubeconfig shows its shape without a made-up host.
STAND_IN_API_SERVER = "aks.example.invalid"
# The shape of AKS's user kubeconfig on a cluster with Entra ID (az aks get-credentials; kubelogin docs,
# concepts/aks): one cluster, context and user, the user an exec of kubelogin. Certificate data is Azure's to
# answer and is left out.
STAND_IN_KUBECONFIG = f"""apiVersion: v1
kind: Config
clusters:
- name: aks
  cluster:
    server: https://{STAND_IN_API_SERVER}:443
contexts:
- name: aks
  context:
    cluster: aks
    user: clusterUser_aks
current-context: aks
users:
- name: clusterUser_aks
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: kubelogin
      args: [get-token, --login, devicecode, --server-id, 6dae42f8-4368-4678-94ff-3960e28e3630]
"""

# Stand-in for the file system's MGS address, which Azure assigns in its subnet at creation: an RFC 5737
# documentation address, never routable, so the offline plan shows the mount's shape without a made-up host.
STAND_IN_MGS_ADDRESS = "192.0.2.4"
# Stand-in for a NIC's dynamic private address (the Slurm head node's), which Azure assigns from the subnet at
# creation: another RFC 5737 documentation address, so the nodes' join shows its shape without a made-up host.
STAND_IN_PRIVATE_ADDRESS = "192.0.2.5"

# Resources whose user-assigned identities go in as a list of ids and come back as a map by id.
IDENTITY_MAPS = {
    "azure-native:compute:VirtualMachineScaleSet",
    "azure-native:compute:VirtualMachine",
    "azure-native:containerservice:ManagedCluster",
    "azure-native:virtualmachineimages:VirtualMachineImageTemplate",
    "azure-native:storagecache:AmlFilesystem",
}


def _name(name: str, inputs: dict[str, Any], key: str, seed: str) -> str:
    """The name input, or what Pulumi's autonaming gives: the logical name and a random suffix."""
    return inputs.get(key) or f"{name}{digest(seed, 8)}"


def _group_id(group: str) -> str:
    return f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{group}"


def _arm(typ: str, name: str, inputs: dict[str, Any], seed: str) -> Outputs:
    path, key = ARM_PATHS[typ]
    physical = _name(name, inputs, key, seed)
    arm_id = f"{_group_id(inputs['resourceGroupName'])}/providers/{path.format(**inputs)}/{physical}"
    outputs: dict[str, Any] = {"id": arm_id, "name": physical}
    if typ == "azure-native:keyvault:Key":
        uri = f"https://{inputs['vaultName']}.vault.azure.net/keys/{physical}"
        outputs.update(keyUri=uri, keyUriWithVersion=f"{uri}/{digest(seed, 32)}")
    elif typ == "azure-native:managedidentity:UserAssignedIdentity":
        outputs.update(principalId=guid(seed + "principal"), clientId=guid(seed + "client"), tenantId=TENANT)
    elif typ == "azure-native:compute:DiskEncryptionSet" and (inputs.get("identity") or {}).get("type"):
        outputs["identity"] = {**inputs["identity"], "principalId": guid(seed + "principal"), "tenantId": TENANT}
    if typ == "azure-native:compute:VirtualMachineScaleSet":
        outputs["uniqueId"] = guid(seed)
    if typ == "azure-native:network:NetworkInterface":
        outputs["ipConfigurations"] = [{**config, "privateIPAddress": STAND_IN_PRIVATE_ADDRESS}
                                       for config in inputs.get("ipConfigurations") or []]
    if typ == "azure-native:storagecache:AmlFilesystem":
        # Only the address: the Lustre version and mount command are Azure's to answer.
        outputs["clientInfo"] = {"mgsAddress": STAND_IN_MGS_ADDRESS}
    if typ in IDENTITY_MAPS and (inputs.get("identity") or {}).get("userAssignedIdentities"):
        # Sent as a list of ids, returned as a map by id (the identities' own ids are theirs to answer). An
        # image template has not run offline, so its lastRunStatus stays unset.
        identity = inputs["identity"]
        by_id = dict.fromkeys(identity["userAssignedIdentities"], {})
        outputs["identity"] = {**identity, "userAssignedIdentities": by_id}
    return arm_id, outputs


def _resource_group(typ: str, name: str, inputs: dict[str, Any], seed: str) -> Outputs:
    group = _name(name, inputs, "resourceGroupName", seed)
    return _group_id(group), {"id": _group_id(group), "name": group}


def _role_assignment(typ: str, name: str, inputs: dict[str, Any], seed: str) -> Outputs:
    """Named by a GUID, under the scope it grants on."""
    assignment = inputs.get("roleAssignmentName") or guid(seed)
    arm_id = f"{inputs['scope']}/providers/Microsoft.Authorization/roleAssignments/{assignment}"
    return arm_id, {"id": arm_id, "name": assignment}


def _budget(typ: str, name: str, inputs: dict[str, Any], seed: str) -> Outputs:
    """An extension resource under the scope it budgets (a resource group here)."""
    budget = inputs.get("budgetName") or f"{name}{digest(seed, 8)}"
    arm_id = f"{inputs['scope']}/providers/Microsoft.Consumption/budgets/{budget}"
    return arm_id, {"id": arm_id, "name": budget}


def _rule_association(typ: str, name: str, inputs: dict[str, Any], seed: str) -> Outputs:
    """An extension resource under the resource whose data it collects (the AKS cluster here)."""
    association = inputs.get("associationName") or f"{name}{digest(seed, 8)}"
    arm_id = f"{inputs['resourceUri']}/providers/Microsoft.Insights/dataCollectionRuleAssociations/{association}"
    return arm_id, {"id": arm_id, "name": association}


def _role_definition(typ: str, name: str, inputs: dict[str, Any], seed: str) -> Outputs:
    """Custom role ids live under the subscription whatever scope defines them (as role assignments cite them)."""
    role = inputs.get("roleDefinitionId") or guid(seed)
    arm_id = f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/{role}"
    return arm_id, {"id": arm_id, "name": role}


def _metric_seed(typ: str, name: str, inputs: dict[str, Any], seed: str) -> Outputs:
    """The dynamic provider's create returns the id of the metric it made exist and its inputs as outputs: the
    same function answers here."""
    from components.clouds.azure.metric_seed import seed_id

    return seed_id(inputs), {}


ANSWERS: dict[str, Callable[[str, str, dict[str, Any], str], Outputs]] = {
    "azure-native:resources:ResourceGroup": _resource_group,
    "azure-native:authorization:RoleAssignment": _role_assignment,
    "azure-native:authorization:RoleDefinition": _role_definition,
    "azure-native:consumption:Budget": _budget,
    "azure-native:monitor:DataCollectionRuleAssociation": _rule_association,
    "pulumi-python:dynamic/azure:MetricSeed": _metric_seed,
}


def new_resource(typ: str, name: str, inputs: dict[str, Any], region: str) -> Outputs:
    """The ARM id and computed outputs of an Azure resource."""
    seed = f"{typ}::{name}"
    if typ in ARM_PATHS:
        return _arm(typ, name, inputs, seed)
    answer = ANSWERS.get(typ)
    if answer is None:
        raise LookupError(f"no offline azure answer for {typ}: add its ARM path to this cloud's mock_answers.py")
    return answer(typ, name, inputs, seed)


def invoke(token: str, region: str, zones: list[str]) -> dict[str, Any] | None:
    """A local answer to an Azure invoke, or None when there is none."""
    if token == "azure-native:authorization:getClientConfig":
        return {"clientId": CLIENT, "objectId": CLIENT, "subscriptionId": SUBSCRIPTION, "tenantId": TENANT}
    if token == "azure-native:managedidentity:getUserAssignedIdentity":
        # A brought identity's ids are Azure's to answer: stand-ins, as for a created one.
        return {"principalId": guid("brought identity principal"), "clientId": guid("brought identity client"),
                "tenantId": TENANT}
    if token == "azure-native:containerservice:listManagedClusterUserCredentials":
        # CredentialResults: kubeconfigs[], each a name and the base64 kubeconfig file (azure-native's
        # ListManagedClusterUserCredentialsResult / CredentialResultResponse).
        encoded = base64.b64encode(STAND_IN_KUBECONFIG.encode()).decode()
        return {"kubeconfigs": [{"name": "clusterUser", "value": encoded}]}
    return None
