"""AWS resource type tokens the rules read, and the security-group values several rules share."""

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
ASG = "aws:autoscaling/group:Group"
FLEET = "aws:ec2/fleet:Fleet"
INSTANCE = "aws:ec2/instance:Instance"
EBS_VOLUME = "aws:ebs/volume:Volume"
KMS_KEY = "aws:kms/key:Key"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
SECURITY_GROUP_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
VPC_INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
VPC_EGRESS_RULE = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
PLACEMENT_GROUP = "aws:ec2/placementGroup:PlacementGroup"
EVENT_RULE = "aws:cloudwatch/eventRule:EventRule"
IMAGE_RECIPE = "aws:imagebuilder/imageRecipe:ImageRecipe"
INFRASTRUCTURE_CONFIGURATION = "aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration"

ALL_PROTOCOLS = ("-1", "all")  # security group protocol values that mean all traffic
