"""Every name the Alibaba Cloud components give a resource, with Alibaba's rules (the provider SDK's documented
argument text, which pulumi-alicloud copies from the API references, or the API reference itself). Checked against
every plan by tests/components/clouds/test_names.py."""

from __future__ import annotations

from ..naming import NameRule, NameTable, fit

SDK = "pulumi-alicloud 4.0.0"
ESS = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
ESS_TEXT = "2-64 characters, starting with a digit or letter, with digits, letters, _ - and ."
NO_LIMIT = "no length or characters documented by the provider or found in the CloudMonitor API reference (unconfirmed)"
ANY = r"[\s\S]+"
PROJECT = "alicloud:log/project:Project"
ROLE = "alicloud:ram/role:Role"
POLICY = "alicloud:ram/policy:Policy"
ATTACHMENT = "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment"
CONFIGURATION = "alicloud:ess/scalingConfiguration:ScalingConfiguration"
CONTACT = "alicloud:cms/alarmContact:AlarmContact"
ACK = "alicloud:cs/managedKubernetes:ManagedKubernetes"
SLB_ACL = "alicloud:slb/acl:Acl"

NAMES = NameTable(
    [
        NameRule("alicloud:ess/scalingGroup:ScalingGroup", "scalingGroupName", 64, ESS, "region",
                 f"{SDK} ess.ScalingGroup scaling_group_name: {ESS_TEXT}", min_len=2),
        NameRule(CONFIGURATION, "scalingConfigurationName", 64, ESS,
                 "parent", f"{SDK} ess.ScalingConfiguration scaling_configuration_name: {ESS_TEXT}", min_len=2),
        NameRule("alicloud:ess/scalingRule:ScalingRule", "scalingRuleName", 64, ESS, "parent",
                 f"{SDK} ess.ScalingRule scaling_rule_name: {ESS_TEXT}", min_len=2),
        NameRule("alicloud:ess/lifecycleHook:LifecycleHook", "name", 64, ESS, "parent",
                 f"{SDK} ess.LifecycleHook name: {ESS_TEXT}", min_len=2),
        NameRule("alicloud:ess/alarm:Alarm", "name", None, ANY, "parent",
                 f"{SDK} ess.Alarm name: 'The name for ess alarm', no length documented (unconfirmed)"),
        NameRule(PROJECT, "projectName", 63, r"[a-z0-9][a-z0-9-]*[a-z0-9]", "region, every account",
                 f"Simple Log Service API CreateProject: a project name is globally unique in an Alibaba Cloud "
                 f"region; {SDK} log.Project project_name: lowercase letters, digits and hyphens, start and end with "
                 "a letter or digit, 3-63 characters", min_len=3),
        NameRule("alicloud:log/store:Store", "logstoreName", 63, r"[a-z0-9][a-z0-9_-]*[a-z0-9]", "parent",
                 "Log Service Logstore naming rules: lowercase letters, digits, hyphens and underscores, start and "
                 "end with a lowercase letter or digit, 2-63 bytes, unique in the project", min_len=2),
        NameRule(ROLE, "roleName", 64, r"[A-Za-z0-9.-]+", "account",
                 "RAM API CreateRole: RoleName 1-64 characters, letters, digits, periods and hyphens; RAM roles "
                 "belong to the account (no region)"),
        NameRule(POLICY, "policyName", 128, r"[A-Za-z0-9-]+", "account",
                 f"{SDK} ram.Policy policy_name: 1-128 characters, letters, digits and dashes; RAM policies belong "
                 "to the account (no region)"),
        NameRule("alicloud:cms/eventRule:EventRule", "ruleName", None, ANY, "account",
                 f"CloudMonitor API PutEventRule: an existing rule name modifies that rule (account-wide, no "
                 f"region); {NO_LIMIT}"),
        NameRule("alicloud:cms/alarmContactGroup:AlarmContactGroup", "alarmContactGroupName", None, ANY, "account",
                 f"CloudMonitor contact groups belong to the account (the provider keys it by name); {NO_LIMIT}"),
        NameRule(CONTACT, "alarmContactName", 40, r"[A-Za-z][A-Za-z0-9._]*", "account",
                 "ROS ALIYUN::CMS::Contact ContactName: 2-40 characters, letters, digits, periods and underscores, "
                 "starting with a letter; CloudMonitor API PutContact creates or modifies the contact of that name "
                 f"(account-wide); {SDK} cms.AlarmContact alarm_contact_name: 2-40 characters", min_len=2),
        NameRule("alicloud:cms/monitorGroup:MonitorGroup", "monitorGroupName", None, ANY, "account",
                 f"CloudMonitor application groups belong to the account (no region); {NO_LIMIT}"),
        NameRule(SLB_ACL, "name", 80, r"[A-Za-z0-9._/-]+", "region",
                 "CLB API CreateAccessControlList AclName: 1-80 characters, letters, digits, periods, hyphens, forward "
                 f"slashes and underscores (unconfirmed: the reference's parameter text was not read in full); {SDK} "
                 "slb.Acl name: 'Name of the access control list', required"),
        # The custom-metric alert rules (components/clouds/alicloud/custom_metric_rule.py): the id is the rule's
        # identity (account-wide, hashed with region and account); the name is what the console shows.
        NameRule("pulumi-python:dynamic/alicloud:CustomMetricRule", "rule_name", None, ANY, "none",
                 f"CloudMonitor API PutCustomMetricRule RuleName: the rule's display name, RuleId its identity; "
                 f"{NO_LIMIT}"),
        NameRule("alicloud:oos/template:Template", "templateName", 200,
                 r"(?!(?i:aliyun|acs|alibaba|alicloud))[A-Za-z0-9_-]+", "region",
                 f"{SDK} oos.Template template_name: up to 200 characters, letters, digits, - and _, not starting "
                 "with ALIYUN, ACS, ALIBABA or ALICLOUD"),
        NameRule("alicloud:kms/alias:Alias", "aliasName", 261, r"alias/[A-Za-z0-9_/-]+", "region",
                 f"{SDK} kms.Alias alias_name: 1-255 characters after the prefix alias/; KMS API CreateAlias: "
                 "letters, digits, _ - and /"),
        NameRule("alicloud:ecs/securityGroup:SecurityGroup", "securityGroupName", 128,
                 r"(?!https?://)[A-Za-z][A-Za-z0-9:_.-]*", "vpc",
                 f"{SDK} ecs.SecurityGroup security_group_name: 2-128, start with a letter, letters, digits, "
                 ": _ . -, not http:// or https://", min_len=2),
        NameRule("alicloud:vpc/network:Network", "vpcName", 128, r"(?!https?://)[\s\S]+", "region",
                 f"{SDK} vpc.Network vpc_name: 1-128 characters, not starting with http:// or https://"),
        NameRule("alicloud:vpc/switch:Switch", "vswitchName", 128, r"(?!https?://)[\s\S]+", "vpc",
                 f"{SDK} vpc.Switch vswitch_name: 1-128 characters, not starting with http:// or https://"),
        NameRule("alicloud:vpc/natGateway:NatGateway", "natGatewayName", 128,
                 r"(?!https?://)[A-Za-z0-9_.][A-Za-z0-9_.-]*[A-Za-z0-9_.]", "vpc",
                 f"{SDK} vpc.NatGateway nat_gateway_name: 2-128, alphanumerics, - . _, not beginning or ending "
                 "with a hyphen", min_len=2),
        NameRule("alicloud:ecs/eipAddress:EipAddress", "addressName", 128, r"[A-Za-z][A-Za-z0-9._-]*", "region",
                 f"{SDK} ecs.EipAddress address_name: 1-128, start with a letter, letters, digits, . _ -"),
        NameRule("alicloud:ecs/ecsLaunchTemplate:EcsLaunchTemplate", "launchTemplateName", 128,
                 r"(?!https?://)[A-Za-z][A-Za-z0-9:_.-]*", "region",
                 "ECS API CreateLaunchTemplate: LaunchTemplateName 2-128, start with a letter, letters, digits, "
                 ": _ . -, not http:// or https://", min_len=2),
        NameRule("alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet", "deploymentSetName", 128,
                 r"(?!https?://)[A-Za-z][A-Za-z0-9:_-]*", "region",
                 f"{SDK} ecs.EcsDeploymentSet deployment_set_name: 2-128, start with a letter, letters, digits, "
                 ": _ -", min_len=2),
        NameRule("alicloud:ecs/ecsImageComponent:EcsImageComponent", "imageComponentName", 128,
                 r"(?!https?://)[A-Z][A-Za-z0-9:_.-]*", "region",
                 f"{SDK} ecs.EcsImageComponent image_component_name: 2-128, start with an uppercase letter, "
                 "letters, digits, : _ . -", min_len=2),
        NameRule("alicloud:ecs/ecsImagePipeline:EcsImagePipeline", "name", 128,
                 r"(?!https?://)[A-Za-z][A-Za-z0-9:_.-]*", "region",
                 f"{SDK} ecs.EcsImagePipeline name: 2-128, start with a letter, letters, digits, : _ . -", min_len=2),
        NameRule("alicloud:ecs/ecsImagePipeline:EcsImagePipeline", "imageName", 64,
                 r"(?!https?://)[A-Za-z][A-Za-z0-9:_.-]*", "region",
                 f"{SDK} ecs.EcsImagePipeline image_name: a prefix of 2-64, start with a letter, letters, digits, "
                 ": _ . -", min_len=2),
        # --- ACK node pools (ack-pools) ---
        NameRule("alicloud:cs/nodePool:NodePool", "nodePoolName", None, ANY, "parent",
                 f"{SDK} cs.NodePool node_pool_name: 'The name of node pool.', no length or characters documented; "
                 "terraform-provider-alicloud resource_alicloud_cs_kubernetes_node_pool.go (81c43b6) validates none "
                 "(unconfirmed); unique in its cluster by group name"),
        # --- end ACK node pools ---
        # --- ACK's ARMS alerts (ack_alerts.py): the provider validates none of these names (@81c43b6
        # resource_alicloud_arms_*.go); ARMS keys each by its numeric id, so a name need not be unique. They carry the
        # environment all the same: a dispatch rule matches the account's alerts by name (ack_alerts.py).
        NameRule("alicloud:arms/alertContact:AlertContact", "alertContactName", None, ANY, "none",
                 f"{SDK} arms.AlertContact alert_contact_name: {NO_LIMIT}"),
        NameRule("alicloud:arms/alertContactGroup:AlertContactGroup", "alertContactGroupName", None, ANY, "none",
                 f"{SDK} arms.AlertContactGroup alert_contact_group_name: {NO_LIMIT}"),
        NameRule("alicloud:arms/dispatchRule:DispatchRule", "dispatchRuleName", None, ANY, "none",
                 f"{SDK} arms.DispatchRule dispatch_rule_name: {NO_LIMIT}"),
        NameRule("alicloud:arms/prometheusAlertRule:PrometheusAlertRule", "prometheusAlertRuleName", None, ANY,
                 "parent", f"{SDK} arms.PrometheusAlertRule prometheus_alert_rule_name (AlertName): {NO_LIMIT}"),
        # --- end ACK's ARMS alerts ---
        # ACK (ack-cluster): the cluster; its RRSA roles and policies are RAM rows above, its log project the
        # Log Service row.
        NameRule(ACK, "name", 63, ANY, "account",
                 "aliyun/terraform-provider-alicloud @81c43b6 resource_alicloud_cs_managed_kubernetes.go:40-46 name: "
                 f"StringLenBetween(1, 63); {SDK} cs.ManagedKubernetes name: unique in one Alibaba Cloud account"),
    ],
    {
        (ACK, "controlPlaneLogProject"): "the log project's name (its own row)",
        (ACK, "addons[].name"): "an ACK add-on's id (ack_addons.py)",
        ("alicloud:cs/kubernetesAddon:KubernetesAddon", "name"): "an ACK add-on's id (ack_addons.py)",
        ("alicloud:cs/kubernetesPermission:KubernetesPermission", "permissions[].roleName"):
            "ACK's predefined cluster role (admin)",
        ("alicloud:log/store:Store", "projectName"): "the project's name (its own row)",
        ("alicloud:cms/eventRule:EventRule", "contactParameters[].contactGroupName"):
            "the alarm contact group's name (its own row, or the stack's brought group)",
        (ATTACHMENT, "roleName"): "the RAM role's name (its own row)",
        (ATTACHMENT, "policyName"): "the RAM policy's name (its own row)",
        ("alicloud:ecs/ecsLaunchTemplate:EcsLaunchTemplate", "ramRoleName"): "the RAM role's name",
        ("alicloud:ess/scalingConfiguration:ScalingConfiguration", "roleName"): "the RAM role's name",
        ("alicloud:ess/alarm:Alarm", "metricName"): "a metric the nodes publish",
        ("alicloud:arms/prometheusAlertRule:PrometheusAlertRule", "labels[].name"): "a Prometheus label key (severity)",
        ("alicloud:arms/dispatchRule:DispatchRule", "notifyRules[].notifyObjects[].name"):
            "the ARMS alert contact group's label in the policy",
        ("pulumi-python:dynamic/alicloud:CustomMetricRule", "metric_name"): "a metric the nodes publish",
    },
)


def ack_cluster_name(cluster: str, environment: str, region: str) -> str:
    """The ACK cluster's name: gpufleet-<name>-<environment>, hashed with the region to at most 63 characters."""
    return fit(f"gpufleet-{cluster}-{environment}", 63, region)
