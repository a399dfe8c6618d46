"""The customer-managed KMS key that encrypts node volumes, logs, the topics and the shared file system; or a
brought key."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_aws as aws

from .key_policy import LogGroupGrant, ServiceRole, key_policy, service_linked_roles

# Deletion waits the longest AWS allows, so a mistaken destroy can be undone.
DELETION_WINDOW_DAYS = 30


def cluster_key(
    name: str,
    log_group: LogGroupGrant,
    environment: str,
    roles: Sequence[ServiceRole],
    create_roles: bool,
    events: bool,
    protect: bool,
    tags: dict[str, str],
    opts: pulumi.ResourceOptions,
    publishers: Sequence[str],
    role_patterns: Sequence[ServiceRole],
) -> tuple[aws.kms.Key, dict[str, aws.iam.ServiceLinkedRole]]:
    """The key, its alias, and (create_roles) the service-linked roles its policy names, made first; returns
    the key and the created roles by service. events: EventBridge publishes to a topic under this key (the
    interruption topic); publishers: the services that publish to the alarm topic under it; role_patterns:
    roles admitted by ARN whether or not they exist (key_policy)."""
    identity = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=opts.parent))
    created = service_linked_roles(name, roles, opts) if create_roles else []
    key = aws.kms.Key(
        f"{name}-key",
        description=f"gpufleet {name}: node volumes, logs and interruption topic",
        enable_key_rotation=True,
        deletion_window_in_days=DELETION_WINDOW_DAYS,
        policy=identity.account_id.apply(lambda account: key_policy(
            account, roles, log_group=log_group, role_patterns=role_patterns, events=events, publishers=publishers
        )),
        tags=tags,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(protect=protect, depends_on=created)),
    )
    # An alias is unique per account and Region: the environment keeps dev's and prod's of one cluster apart.
    aws.kms.Alias(f"{name}-key", name=f"alias/gpufleet/{name}/{environment}", target_key_id=key.key_id, opts=opts)
    return key, {role.service: resource for role, resource in zip(roles, created, strict=False)}
