"""EC2 Image Builder pipeline that bakes one pinned driver image profile into encrypted AMIs."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from ipaddress import IPv4Network

import pulumi
import pulumi_aws as aws

from gpufleet.lock.bundle import content_version
from gpufleet.lock.image_ids import AWS_REGION as REGION
from gpufleet.lock.image_ids import EXPECTED_PARENT_SHAPE, is_valid_parent_image

from .build_network import BuildNetworkArgs, build_network
from .image_documents import build_documents
from .key_policy import AUTOSCALING, EC2_FLEET, LogGroupGrant, key_policy

# The profile goes into the AMI name, whose allowed characters Image Builder restricts.
PROFILE = re.compile(r"^[A-Za-z0-9][-_A-Za-z0-9.]{0,63}$")
MANAGED_POLICIES = (
    "arn:aws:iam::aws:policy/EC2InstanceProfileForImageBuilder",
    "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
)
# Clusters launch the AMIs through these roles, which must decrypt the image key's snapshots.
LAUNCH_ROLES = (AUTOSCALING, EC2_FLEET)
# CreateComponent `data`: "Length Constraints: Minimum length of 1. Maximum length of 16000." (Image Builder API
# reference); the installer comes in parts (gpufleet.lock.bundle.installer_parts), one component each.
MAX_COMPONENT_DATA = 16_000


@dataclass(frozen=True)
class AwsImagePipelineArgs:
    """Inputs of AwsImagePipeline."""

    profile: str
    """Image profile name from images/lock.yaml; part of every AMI name."""
    parent_image: str
    """Base image in the build region, as images/lock.yaml base_images pins it: an AMI id, an AWS-managed
    image ARN with an explicit version, or an `ssm:` parameter that Image Builder resolves at build time.
    Wildcard versions (x.x.x), `resolve:ssm:` and "latest" aliases are refused."""
    installer_parts: list[str]
    """Shell commands the build runs in order, one component each (gpufleet.lock.bundle.installer_parts): the
    last installs and is checked on the build and test instances."""
    regions: list[str]
    """Distribution regions; the first is the build region, where the pipeline and its key live."""
    kms_key_arn: pulumi.Input[str] | None = None
    """Key for the build-region root volume and AMI; None creates a customer-managed key with rotation on."""
    instance_types: list[str] = field(default_factory=list)
    """EC2 instance types for the build and test instances."""
    subnet_id: pulumi.Input[str] | None = None
    """Brought subnet for the build instance, with security_group_ids; None: build_network creates one."""
    security_group_ids: list[pulumi.Input[str]] | None = None
    """Security groups of the build instance; required with subnet_id."""
    build_network: tuple[IPv4Network, str, int] | None = None
    """Without subnet_id: the CIDR, zone and flow log retention (days) of the build network to create (no build falls
    back to the default VPC, which many accounts delete)."""
    tags: dict[str, str] = field(default_factory=dict)
    """Tags for every resource and for the build instance."""
    replica_kms_key_arns: dict[str, pulumi.Input[str]] = field(default_factory=dict)
    """With kms_key_arn: the key to use in each other region. A created key is replicated instead."""
    root_volume_gb: int = 200
    """Size of the image's root volume in GiB."""
    root_device_name: str = "/dev/sda1"
    """Root device of parent_image (Ubuntu: /dev/sda1, Amazon Linux: /dev/xvda)."""

    def __post_init__(self) -> None:
        if not isinstance(self.profile, str) or not PROFILE.match(self.profile):
            raise ValueError(
                f"profile: {self.profile!r} must be 1-64 letters, digits, '-', '_' or '.', "
                "starting with a letter or digit"
            )
        image = self.parent_image
        if not isinstance(image, str) or "latest" in image.lower() or not is_valid_parent_image("aws", image):
            raise ValueError(f"parent_image: {image!r} is not a pinnable parent image: expected "
                             f"{EXPECTED_PARENT_SHAPE['aws']}")
        if not self.installer_parts or not all(isinstance(p, str) and p.strip() for p in self.installer_parts):
            raise ValueError("installer_parts: must be one or more non-empty shell commands")
        for index, data in enumerate(build_documents(self.profile, self.installer_parts)):
            if len(data) > MAX_COMPONENT_DATA:
                raise ValueError(f"installer_parts[{index}]: its component would be {len(data)} characters; "
                                 f"Image Builder takes {MAX_COMPONENT_DATA} of inline data")
        if not self.regions:
            raise ValueError("regions: needs at least one region (the first is the build region)")
        for region in self.regions:
            if not isinstance(region, str) or not REGION.fullmatch(region):
                raise ValueError(f"regions: {region!r} is not an AWS region name")
        if len(set(self.regions)) != len(self.regions):
            raise ValueError(f"regions: {self.regions} lists a region twice")
        if not self.instance_types:
            raise ValueError("instance_types: needs at least one build instance type")
        if self.subnet_id is not None and not self.security_group_ids:
            raise ValueError("security_group_ids: required when subnet_id is set")
        if (self.subnet_id is None) == (self.build_network is None):
            raise ValueError("subnet_id: give a brought subnet or build_network to create one (not both, not neither)")
        if self.kms_key_arn is None and self.replica_kms_key_arns:
            raise ValueError("replica_kms_key_arns: only with kms_key_arn; a created key is replicated")
        if self.kms_key_arn is not None:
            missing = [r for r in self.regions[1:] if r not in self.replica_kms_key_arns]
            if missing:
                raise ValueError(
                    f"replica_kms_key_arns: a KMS key is regional; give one for {', '.join(missing)}"
                )
        if not isinstance(self.root_volume_gb, int) or self.root_volume_gb < 8:
            raise ValueError(f"root_volume_gb: must be an integer >= 8, got {self.root_volume_gb!r}")


def _amis_by_region(resources: list[aws.imagebuilder.outputs.ImageOutputResource] | None) -> dict[str, str]:
    """Region -> AMI id from an image's output resources (empty until the build has run)."""
    return {
        ami.region: ami.image
        for resource in resources or []
        for ami in resource.amis or []
        if ami.region and ami.image
    }


class AwsImagePipeline(pulumi.ComponentResource):
    """Image Builder component, recipe, build infrastructure and per-region encrypted distribution."""

    pipeline_arn: pulumi.Output[str]
    recipe_arn: pulumi.Output[str]
    kms_key_arn: pulumi.Output[str]
    image_arn: pulumi.Output[str]
    amis: pulumi.Output[dict[str, str]]
    """Region -> AMI id of the image this `pulumi up` baked (what `gpufleet images pin` writes to the lock)."""

    def __init__(
        self, name: str, args: AwsImagePipelineArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpufleet:aws:ImagePipeline", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        build_region = args.regions[0]
        # The build network's flow log lands in this group; a created key admits it by name (key_policy).
        log_group = LogGroupGrant(region=build_region, name=f"/gpufleet/{name}/image-build")
        keys = create_keys(name, args, log_group if args.build_network else None, self)
        placement = create_build_network(name, args, keys, log_group, self)
        recipe = create_recipe(name, args, keys[build_region], child)
        profile, attachments = create_build_identity(name, args, child)
        infrastructure = create_infrastructure(name, args, profile, placement, attachments, self)
        distribution = create_distribution(name, args, keys, child)
        pipeline, image = create_pipeline(name, args, recipe, infrastructure, distribution, self)

        self.pipeline_arn = pipeline.arn
        self.recipe_arn = recipe.arn
        self.kms_key_arn = pulumi.Output.from_input(keys[build_region])
        self.image_arn = image.arn
        self.amis = image.output_resources.apply(_amis_by_region)
        self.register_outputs(
            {
                "pipeline_arn": self.pipeline_arn,
                "recipe_arn": self.recipe_arn,
                "kms_key_arn": self.kms_key_arn,
                "image_arn": self.image_arn,
                "amis": self.amis,
            }
        )


def create_keys(
    name: str, args: AwsImagePipelineArgs, log_group: LogGroupGrant | None, parent: pulumi.Resource
) -> dict[str, pulumi.Input[str]]:
    """The KMS key of each region: the caller's, or a created key and its replicas."""
    build_region, *others = args.regions
    if args.kms_key_arn is not None:
        return {build_region: args.kms_key_arn, **{r: args.replica_kms_key_arns[r] for r in others}}
    child, tags = pulumi.ResourceOptions(parent=parent), dict(args.tags)
    account = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=parent)).account_id
    # Without these statements (AWS's default policy) no Auto Scaling group or fleet can launch the AMIs.
    # By ARN pattern: every cluster's own suffixed Auto Scaling role, made after this key, and roles that
    # need not exist yet (a new account), so the bake creates no service-linked role.
    policy = account.apply(
        lambda account_id: key_policy(account_id, (), log_group=log_group, role_patterns=LAUNCH_ROLES)
    )
    key = aws.kms.Key(
        f"{name}-key",
        description=f"gpufleet AMIs of image profile {args.profile}",
        enable_key_rotation=True,
        deletion_window_in_days=30,
        # A key is regional: AMIs copied to other regions use replicas of a multi-Region key.
        multi_region=bool(others),
        policy=policy,
        region=build_region,
        tags=tags,
        opts=child,
    )
    keys: dict[str, pulumi.Input[str]] = {build_region: key.arn}
    for region in others:
        replica = aws.kms.ReplicaKey(
            f"{name}-key-{region}",
            primary_key_arn=key.arn,
            description=f"gpufleet AMIs of image profile {args.profile} in {region}",
            deletion_window_in_days=30,
            # A replica takes its own policy; clusters in its region launch the AMI copies under it.
            policy=policy,
            region=region,
            tags=tags,
            opts=child,
        )
        keys[region] = replica.arn
    return keys


Placement = tuple[pulumi.Input[str], list[pulumi.Input[str]]]
"""The build instance's subnet and security groups."""


def create_build_network(
    name: str, args: AwsImagePipelineArgs, keys: dict[str, pulumi.Input[str]], log_group: LogGroupGrant,
    parent: pulumi.Resource,
) -> Placement:
    """The build network (private subnet, NAT, SSM endpoints, flow log), or the brought subnet and groups."""
    if args.build_network is None:
        return args.subnet_id or "", list(args.security_group_ids or [])
    build_region = args.regions[0]
    cidr, zone, retention_days = args.build_network
    # A brought key's policy may not admit CloudWatch Logs: the flow log group then uses Logs' own keys.
    key = keys[build_region] if args.kms_key_arn is None else None
    subnet_id, group_id = build_network(
        name, BuildNetworkArgs(build_region, cidr, zone, log_group.name, retention_days, key, dict(args.tags)), parent
    )
    return subnet_id, [group_id]


def create_recipe(
    name: str, args: AwsImagePipelineArgs, key: pulumi.Input[str], child: pulumi.ResourceOptions
) -> aws.imagebuilder.ImageRecipe:
    """One component per installer part, in run order, and the recipe that lists them on an encrypted root."""
    build_region, tags = args.regions[0], dict(args.tags)
    documents = build_documents(args.profile, args.installer_parts)
    components = [
        aws.imagebuilder.Component(
            f"{name}-install" if index == len(documents) - 1 else f"{name}-part{index}",
            platform="Linux",
            version=content_version(data),
            data=data,
            description=f"gpufleet driver stack {args.profile}, part {index + 1} of {len(documents)}",
            # The recipe's key: the build instance decrypts the component through Image Builder
            # (EC2InstanceProfileForImageBuilder: kms:Decrypt with the aws:imagebuilder:arn context key).
            kms_key_id=key,
            region=build_region,
            tags=tags,
            opts=child,
        )
        for index, data in enumerate(documents)
    ]
    return aws.imagebuilder.ImageRecipe(
        f"{name}-recipe",
        parent_image=args.parent_image,
        version=content_version(args.parent_image, *documents, str(args.root_volume_gb), args.root_device_name),
        # Image Builder runs a recipe's components in the order listed.
        components=[aws.imagebuilder.ImageRecipeComponentArgs(component_arn=c.arn) for c in components],
        block_device_mappings=[
            aws.imagebuilder.ImageRecipeBlockDeviceMappingArgs(
                device_name=args.root_device_name,
                ebs=aws.imagebuilder.ImageRecipeBlockDeviceMappingEbsArgs(
                    volume_type="gp3",
                    volume_size=args.root_volume_gb,
                    encrypted="true",
                    kms_key_id=key,
                    delete_on_termination="true",
                ),
            )
        ],
        region=build_region,
        tags=tags,
        opts=child,
    )


def create_build_identity(
    name: str, args: AwsImagePipelineArgs, child: pulumi.ResourceOptions
) -> tuple[aws.iam.InstanceProfile, list[aws.iam.RolePolicyAttachment]]:
    """The build instance's role with Image Builder's and SSM's managed policies, and its instance profile."""
    tags = dict(args.tags)
    trust = {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}
    role = aws.iam.Role(
        f"{name}-build-role",
        assume_role_policy=json.dumps({"Version": "2012-10-17", "Statement": [trust]}),
        description=f"Image Builder build instance for {args.profile}",
        tags=tags,
        opts=child,
    )
    attachments = [
        aws.iam.RolePolicyAttachment(
            f"{name}-build-{policy.rsplit('/', 1)[1]}", role=role.name, policy_arn=policy, opts=child
        )
        for policy in MANAGED_POLICIES
    ]
    return aws.iam.InstanceProfile(f"{name}-build-profile", role=role.name, tags=tags, opts=child), attachments


def create_infrastructure(
    name: str, args: AwsImagePipelineArgs, profile: aws.iam.InstanceProfile, placement: Placement,
    attachments: list[aws.iam.RolePolicyAttachment], parent: pulumi.Resource,
) -> aws.imagebuilder.InfrastructureConfiguration:
    """Where and as what the build instance runs: its types, profile, subnet, groups and metadata tokens."""
    tags = dict(args.tags)
    return aws.imagebuilder.InfrastructureConfiguration(
        f"{name}-infrastructure",
        instance_profile_name=profile.name,
        instance_types=list(args.instance_types),
        subnet_id=placement[0],
        security_group_ids=placement[1],
        instance_metadata_options=aws.imagebuilder.InfrastructureConfigurationInstanceMetadataOptionsArgs(
            http_tokens="required",
            http_put_response_hop_limit=2,
        ),
        terminate_instance_on_failure=True,
        resource_tags=tags,
        region=args.regions[0],
        tags=tags,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=attachments),
    )


def create_distribution(
    name: str, args: AwsImagePipelineArgs, keys: dict[str, pulumi.Input[str]], child: pulumi.ResourceOptions
) -> aws.imagebuilder.DistributionConfiguration:
    """The AMI in every region, encrypted with that region's key."""
    tags = dict(args.tags)
    return aws.imagebuilder.DistributionConfiguration(
        f"{name}-distribution",
        distributions=[
            aws.imagebuilder.DistributionConfigurationDistributionArgs(
                region=region,
                ami_distribution_configuration=(
                    aws.imagebuilder.DistributionConfigurationDistributionAmiDistributionConfigurationArgs(
                        name=f"gpufleet-{args.profile}-{{{{ imagebuilder:buildDate }}}}",
                        description=f"gpufleet image profile {args.profile}",
                        kms_key_id=keys[region],
                        ami_tags={**tags, "gpufleet:profile": args.profile},
                    )
                ),
            )
            for region in args.regions
        ],
        region=args.regions[0],
        tags=tags,
        opts=child,
    )


def create_pipeline(
    name: str, args: AwsImagePipelineArgs, recipe: aws.imagebuilder.ImageRecipe,
    infrastructure: aws.imagebuilder.InfrastructureConfiguration,
    distribution: aws.imagebuilder.DistributionConfiguration, parent: pulumi.Resource,
) -> tuple[aws.imagebuilder.ImagePipeline, aws.imagebuilder.Image]:
    """The pipeline, and the bake: one build of the recipe when the stack is deployed, distributed to every
    region. The image's output resources carry the AMI id per region; the pipeline rebakes the same recipe later."""
    # What the pipeline and the first bake build: the same recipe, builder and distribution.
    build = {
        "image_recipe_arn": recipe.arn,
        "infrastructure_configuration_arn": infrastructure.arn,
        "distribution_configuration_arn": distribution.arn,
        "region": args.regions[0],
        "tags": dict(args.tags),
    }
    pipeline = aws.imagebuilder.ImagePipeline(
        f"{name}-pipeline",
        image_tests_configuration=aws.imagebuilder.ImagePipelineImageTestsConfigurationArgs(
            image_tests_enabled=True,
        ),
        description=f"gpufleet image profile {args.profile}",
        opts=pulumi.ResourceOptions(parent=parent),
        **build,
    )
    image = aws.imagebuilder.Image(
        f"{name}-image",
        image_tests_configuration=aws.imagebuilder.ImageImageTestsConfigurationArgs(image_tests_enabled=True),
        **build,
        # Driver, CUDA and fabric installs, a reboot and the image tests outlast the provider's default.
        opts=pulumi.ResourceOptions(parent=parent, custom_timeouts=pulumi.CustomTimeouts(create="3h")),
    )
    return pipeline, image
