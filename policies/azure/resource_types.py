"""Azure resource type tokens the rules read (pulumi-azure-native v3), and values several rules share."""

VMSS = "azure-native:compute:VirtualMachineScaleSet"
DISK = "azure-native:compute:Disk"
DISK_ENCRYPTION_SET = "azure-native:compute:DiskEncryptionSet"
VAULT = "azure-native:keyvault:Vault"
KEY = "azure-native:keyvault:Key"
NSG = "azure-native:network:NetworkSecurityGroup"
SECURITY_RULE = "azure-native:network:SecurityRule"
NIC = "azure-native:network:NetworkInterface"
VNET = "azure-native:network:VirtualNetwork"
ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"
ROLE_DEFINITION = "azure-native:authorization:RoleDefinition"
AUTOSCALE = "azure-native:monitor:AutoscaleSetting"

CUSTOMER_KEY = "EncryptionAtRestWithCustomerKey"
# A scale set's VM profile, where the node settings live.
VM_PROFILE = "virtualMachineProfile"
