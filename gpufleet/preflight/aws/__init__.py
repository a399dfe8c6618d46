"""AWS preflight: read-only questions to the account (boto3, the user's credential chain) about a planned stack.

Cluster stacks: EC2 vCPU quotas per family at size.max (quotas.py), each type offered in each zone and the
reservations groups launch into (placement.py), what the stack brings (brought.py), the service-linked roles,
the budget's cost allocation tag, the pinned AMI and the EKS endpoint reached from here (account.py,
../endpoint.py). Image stacks: images.py. The identity is asked first (STS GetCallerIdentity), so missing or expired
credentials stop preflight before any other call; its account judges every brought key (key_accounts.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..findings import Finding, PreflightUnavailable

if TYPE_CHECKING:
    from gpufleet.clouds.backend import ResolvedCluster
    from gpufleet.prepare import Prepared

    from ..concurrent import Check
    from .clients import AwsClients

SDK_MISSING = "AWS preflight needs boto3: pip install -e '.[preflight]' (the optional SDKs of `gpufleet preflight`)"


def preflight(prepared: Prepared, clients: AwsClients | None = None) -> list[Finding]:
    """Every AWS finding for the stack, in a stable order; PreflightUnavailable when the account cannot be asked."""
    try:
        import boto3  # noqa: F401  (the SDK is an optional extra: say how to install it)
    except ModuleNotFoundError:
        raise PreflightUnavailable(SDK_MISSING) from None
    from gpufleet.stackfile import ImagesSpec

    from ..concurrent import gather
    from ..key_accounts import key_account_findings
    from .clients import ask, default_clients

    region = prepared.regions[0] if isinstance(prepared, ImagesSpec) else prepared.spec.region
    clients = clients or default_clients(region)
    caller = (ask(clients, "sts", "get_caller_identity") or {}).get("Account")

    def accounts() -> list[Finding]:
        return key_account_findings("aws", prepared, caller, "STS GetCallerIdentity")

    if isinstance(prepared, ImagesSpec):
        from .images import image_checks

        return gather([*image_checks(clients, prepared), accounts])  # type: ignore[arg-type]  (an AwsImagesSpec)
    return gather([*cluster_checks(clients, prepared), accounts])


def cluster_checks(clients: AwsClients, cluster: ResolvedCluster) -> list[Check]:
    """One zero-argument check per question, in report order."""
    from . import account, brought, placement, quotas

    spec = cluster.spec
    network, identity = spec.network, spec.identity
    demand, unchecked = quotas.demands(cluster)
    checks: list[Check] = [lambda: unchecked]
    checks += [lambda q=quota, s=spot, d=need: quotas.check_quota(clients, q, s, d)
               for (quota, spot), need in demand.items()]
    checks.append(lambda: placement.check_offerings(clients, cluster))
    checks += [lambda g=group: placement.check_reservation(clients, cluster, g)
               for group in cluster.groups if group.spec.reservation_id]
    if network.vpc_id:
        checks.append(lambda: brought.check_vpc(clients, network.vpc_id or ""))
    checks += [lambda i=index, s=subnet: brought.check_subnet(clients, cluster, i, s)
               for index, subnet in enumerate(network.subnet_ids)]
    if network.security_group_id:
        checks.append(lambda: brought.check_security_group(clients, network.security_group_id or "", network.vpc_id))
    if spec.storage.kms_key != "create":
        checks.append(lambda: brought.check_key(clients, "storage.kms_key", spec.storage.kms_key))
    checks += [lambda i=index, k=key: brought.check_key(clients, f"identity.s3_kms_keys[{i}]", k)
               for index, key in enumerate(identity.s3_kms_keys)]
    alarms = spec.monitoring.alarms
    if alarms is not None and alarms.target != "create":
        checks.append(lambda: brought.check_topic(clients, alarms.target))
    if identity.instance_profile_arn:
        checks.append(lambda: brought.check_instance_profile(clients, identity.instance_profile_arn or ""))
    if identity.permissions_boundary:
        checks.append(lambda: brought.check_boundary(clients, identity.permissions_boundary or ""))
    checks += [
        lambda: account.check_service_linked_roles(clients, cluster),
        lambda: account.check_cost_tag(clients, cluster),
        lambda: account.check_image(clients, cluster),
    ]
    if spec.scheduler.kind == "kubernetes":
        checks.append(lambda: account.check_endpoint(clients, cluster))
    return checks
