"""Every name the AWS components give a resource (the rest are autonamed by the engine: the logical name and a
random suffix, so IAM roles, budgets, alarms and security groups never collide across stacks), with AWS's rules.
Checked against every plan by tests/components/clouds/test_names.py."""

from __future__ import annotations

from ..naming import NameRule, NameTable

ASG = "aws:autoscaling/group:Group"
HOOK = "aws:autoscaling/lifecycleHook:LifecycleHook"
HOOK_NAME = r"[A-Za-z0-9\-_/]+"
TAG_VALUE = r"[\s\S]*"
TAGS = "Amazon EC2 User Guide, Tag restrictions: a tag value is at most 256 Unicode characters"

NAMES = NameTable(
    [
        NameRule(ASG, "name", 255, r"[!-9;-~]+", "region",
                 "EC2 Auto Scaling API Reference, CreateAutoScalingGroup: AutoScalingGroupName 1-255, unique per "
                 "Region per account, ASCII 33-126 without a colon"),
        NameRule(ASG, "initialLifecycleHooks[].name", 255, HOOK_NAME, "parent",
                 "EC2 Auto Scaling API Reference, LifecycleHookSpecification: LifecycleHookName 1-255, "
                 "pattern [A-Za-z0-9\\-_\\/]+"),
        NameRule(HOOK, "name", 255, HOOK_NAME, "parent",
                 "EC2 Auto Scaling API Reference, PutLifecycleHook: LifecycleHookName 1-255, "
                 "pattern [A-Za-z0-9\\-_\\/]+"),
        NameRule("aws:iam/serviceLinkedRole:ServiceLinkedRole", "customSuffix",
                 64 - len("AWSServiceRoleForAutoScaling_"), r"[\w+=,.@-]+", "account",
                 "IAM API Reference, CreateServiceLinkedRole: CustomSuffix [\\w+=,.@-]+, appended to the role name "
                 "after '_'; CreateRole: RoleName at most 64, unique in the account (IAM quotas)"),
        NameRule("aws:cloudwatch/logGroup:LogGroup", "name", 512, r"[.\-_/#A-Za-z0-9]+", "region",
                 "CloudWatch Logs API Reference, CreateLogGroup: logGroupName 1-512, pattern [\\.\\-_/#A-Za-z0-9]+, "
                 "unique within a Region for an account"),
        NameRule("aws:eks/cluster:Cluster", "name", 100, r"[0-9A-Za-z][A-Za-z0-9\-_]*", "region",
                 "Amazon EKS API Reference, CreateCluster: name of alphanumerics, hyphens and underscores, starting "
                 "with an alphanumeric, at most 100 characters, unique within the Region and account"),
        NameRule("aws:kms/alias:Alias", "name", 256, r"alias/(?!aws/)[A-Za-z0-9:/_-]+", "region",
                 "AWS KMS API Reference, CreateAlias: AliasName 1-256, pattern ^[a-zA-Z0-9:/_-]+$, begins with "
                 "alias/ and not alias/aws/; unique in the account and Region"),
        NameRule("aws:imagebuilder/distributionConfiguration:DistributionConfiguration",
                 "distributions[].amiDistributionConfiguration.name", 127,
                 r"[-_A-Za-z0-9{][-_A-Za-z0-9\s:{}.]+[-_A-Za-z0-9}]", "region",
                 "EC2 Image Builder API Reference, AmiDistributionConfiguration: name 1-127, pattern "
                 "^[-_A-Za-z0-9{][-_A-Za-z0-9\\s:{}\\.]+[-_A-Za-z0-9}]$ ({{ imagebuilder:buildDate }} is replaced)"),
        *(NameRule(f"aws:{typ}", "tags.Name", 256, TAG_VALUE, "none", TAGS)
          for typ in ("ec2/vpc:Vpc", "ec2/subnet:Subnet", "ec2/securityGroup:SecurityGroup",
                      "ec2/defaultSecurityGroup:DefaultSecurityGroup",
                      "fsx/lustreFileSystem:LustreFileSystem")),
    ],
    {
        (HOOK, "autoscalingGroupName"): "the scaling group's name (its own row)",
        ("aws:autoscaling/policy:Policy", "autoscalingGroupName"): "the scaling group's name (its own row)",
        ("aws:cloudwatch/metricAlarm:MetricAlarm", "dimensions.AutoScalingGroupName"): "the scaling group's name",
        ("aws:cloudwatch/metricAlarm:MetricAlarm", "metricName"): "a metric CloudWatch or the node agent publishes",
        ("aws:budgets/budget:Budget", "costFilters[].name"): "a cost filter kind from the Budgets API (TagKeyValue)",
        ("aws:ec2/launchTemplate:LaunchTemplate", "blockDeviceMappings[].deviceName"): "the AMI's device name",
        ("aws:ec2/launchTemplate:LaunchTemplate", "placement.groupName"): "the placement group's (autonamed) name",
        ("aws:ec2/vpcEndpoint:VpcEndpoint", "serviceName"): "an AWS endpoint service name",
        ("aws:iam/serviceLinkedRole:ServiceLinkedRole", "awsServiceName"): "an AWS service principal",
        ("aws:imagebuilder/imageRecipe:ImageRecipe", "blockDeviceMappings[].deviceName"): "the AMI's device name",
        ("aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration", "instanceProfileName"):
            "the instance profile's (autonamed) name",
        **{(f"aws:eks/{typ}", "clusterName"): "the EKS cluster's name (its own row)"
           for typ in ("addon:Addon", "accessEntry:AccessEntry", "accessPolicyAssociation:AccessPolicyAssociation",
                       "podIdentityAssociation:PodIdentityAssociation", "nodeGroup:NodeGroup")},
        ("aws:eks/addon:Addon", "addonName"): "an EKS add-on's name (describe-addon-versions lists them)",
    },
)
