"""Alibaba Cloud resource type tokens the rules read (pulumi-alicloud's own), and values several rules share."""

SCALING_CONFIGURATION = "alicloud:ess/scalingConfiguration:ScalingConfiguration"
SCALING_GROUP = "alicloud:ess/scalingGroup:ScalingGroup"
LIFECYCLE_HOOK = "alicloud:ess/lifecycleHook:LifecycleHook"
LAUNCH_TEMPLATE = "alicloud:ecs/ecsLaunchTemplate:EcsLaunchTemplate"
INSTANCE = "alicloud:ecs/instance:Instance"
AUTO_PROVISIONING_GROUP = "alicloud:ecs/autoProvisioningGroup:AutoProvisioningGroup"
DISK = "alicloud:ecs/ecsDisk:EcsDisk"
KMS_KEY = "alicloud:kms/key:Key"
SECURITY_GROUP = "alicloud:ecs/securityGroup:SecurityGroup"
SECURITY_GROUP_RULE = "alicloud:ecs/securityGroupRule:SecurityGroupRule"
VSWITCH = "alicloud:vpc/switch:Switch"
RAM_POLICY = "alicloud:ram/policy:Policy"
EVENT_RULE = "alicloud:cms/eventRule:EventRule"

# Resources that launch nodes: where disks, metadata options, public bandwidth and the image are set.
NODE_TYPES = (SCALING_CONFIGURATION, LAUNCH_TEMPLATE, INSTANCE)
# spot_strategy values that buy preemptible instances (NoSpot is on-demand).
SPOT_STRATEGIES = ("SpotAsPriceGo", "SpotWithPriceLimit")
ERI_TRAFFIC_MODE = "HighPerformance"  # an ENI in this mode is an ERI (eRDMA interface)
GROUP_METRIC_RULE = "alicloud:cms/groupMetricRule:GroupMetricRule"
# gpufleet's own custom-metric alert rules: a dynamic resource calling PutCustomMetricRule (no provider resource does).
CUSTOM_METRIC_RULE = "pulumi-python:dynamic/alicloud:CustomMetricRule"
ESS_ALARM = "alicloud:ess/alarm:Alarm"
NAS_FILE_SYSTEM = "alicloud:nas/fileSystem:FileSystem"
NAS_ACCESS_RULE = "alicloud:nas/accessRule:AccessRule"
ALARM_CONTACT_GROUP = "alicloud:cms/alarmContactGroup:AlarmContactGroup"
# ACK's alerts on ARMS Prometheus (components/clouds/alicloud/ack_alerts.py).
ARMS_ALERT_CONTACT_GROUP = "alicloud:arms/alertContactGroup:AlertContactGroup"
ARMS_ALERT_RULE = "alicloud:arms/prometheusAlertRule:PrometheusAlertRule"
# The Slurm munge key's store (components/clouds/alicloud/slurm_head.py) and the stores the pack refuses for it.
OOS_SECRET_PARAMETER = "alicloud:oos/secretParameter:SecretParameter"
OOS_PARAMETER = "alicloud:oos/parameter:Parameter"
KMS_SECRET = "alicloud:kms/secret:Secret"
EIP_ASSOCIATION = "alicloud:ecs/eipAssociation:EipAssociation"
