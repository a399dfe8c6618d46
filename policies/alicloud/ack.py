"""ACK rules: the managed cluster (ACK Pro with Kubernetes secrets encrypted by a KMS key, no API server endpoint open
to the internet) and its node pools (system and data disks encrypted with the stack's KMS key).

Input names are pulumi-alicloud's cs.ManagedKubernetes and cs.NodePool (managed_kubernetes.py, node_pool.py,
_inputs.py NodePoolDataDisk), as the engine hands them to the pack: camelCase. Defaults a missing input falls back
to are the provider's: cluster_spec empty is not Pro, `disable_encryption` "Default value is false" (but secrets are
encrypted only with `encryption_provider_key` set, which needs Pro: ALI doc-detail/187472.htm),
`slb_internet_enabled` "Default to true" (an internet-facing API server), `system_disk_encrypted` and data disk
`encrypted` default false.

ManagedKubernetes has no input that limits who reaches a public API server: the only limit is an access control list
bound as a whitelist to the TCP 6443 listener of the CLB ACK made for it (its slb_id). pulumi-alicloud cannot bind a
list to a listener it did not create, so gpufleet's dynamic resource does (components/clouds/alicloud/
api_server_acl.py, BINDING). A public endpoint passes only where such a binding takes its load balancer from this
cluster and its list from a stack ACL, and the list's entries (its entry_lists and the slb.AclEntryAttachment
resources on it) together are named ranges no wider than address_ranges.too_wide allows. An ACL bound to nothing,
or bound as a blacklist, limits nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpufleet.stackfile.address_ranges import parse_range, too_wide

from ..meta import MANDATORY, Config, Finding, Node, Props, Rule, Stack, resource_rule, stack_rule
from ..props import UNKNOWN, as_bool, as_int, get, items
from .resource_types import KMS_KEY

MANAGED_KUBERNETES = "alicloud:cs/managedKubernetes:ManagedKubernetes"
NODE_POOL = "alicloud:cs/nodePool:NodePool"
SLB_ACL = "alicloud:slb/acl:Acl"
ACL_ENTRY = "alicloud:slb/aclEntryAttachment:AclEntryAttachment"
# components/clouds/alicloud/api_server_acl.py BINDING_TYPE (the pack never imports the program).
BINDING = "pulumi-python:dynamic/alicloud:ApiServerAcl"
API_SERVER_PORT = 6443
PRO_SPEC = "ack.pro."


def check_pro_secrets(resource_type: str, props: Props, config: Config) -> Iterator[str]:
    spec, key = get(props, "clusterSpec"), get(props, "encryptionProviderKey")
    disabled = get(props, "disableEncryption")
    if spec is not UNKNOWN and not (isinstance(spec, str) and spec.startswith(PRO_SPEC)):
        yield (f"cluster_spec is {spec!r}, not ACK Pro: secrets encryption with a KMS key needs Pro; set "
               "cluster_spec = 'ack.pro.small'")
    if key is not UNKNOWN and not (isinstance(key, str) and key.strip()):
        yield ("Kubernetes secrets are not encrypted with a KMS key: set encryption_provider_key to the stack's KMS "
               "key id")
    if as_bool(disabled) is True:
        yield "disable_encryption is True, so secrets are stored unencrypted: set disable_encryption = False"


def _public(cluster: Node) -> bool | None:
    """Whether the cluster's API server gets an internet-facing endpoint (None while unknown)."""
    value = get(cluster.props, "slbInternetEnabled")
    if value is UNKNOWN:
        return None
    return as_bool(value) is not False


def _list_entries(stack: Stack, acl: Node) -> list[Any] | None:
    """An ACL's entries: its own entry_lists and the entry attachments on it (None while one is unknown)."""
    listed = items(acl.props, "entryLists")
    if listed is UNKNOWN:
        return None
    attached = [entry for entry in stack.dependents_of(acl, ACL_ENTRY)
                if acl in stack.dependencies_of(entry, SLB_ACL, prop="aclId")]
    entries = [get(item, "entry") for item in listed] + [get(entry.props, "entry") for entry in attached]
    return None if UNKNOWN in entries else entries


def _whitelist(stack: Stack, cluster: Node) -> list[Any] | None:
    """Every entry of the whitelists bound to this cluster's API server listener (None while one is unknown)."""
    entries: list[Any] = []
    for binding in stack.dependents_of(cluster, BINDING):
        if cluster not in stack.dependencies_of(binding, MANAGED_KUBERNETES, prop="load_balancer_id"):
            continue
        kind, port = get(binding.props, "acl_type"), get(binding.props, "listener_port")
        if kind is UNKNOWN or port is UNKNOWN:
            return None
        if kind != "white" or as_int(port) != API_SERVER_PORT:
            continue
        for acl in stack.dependencies_of(binding, SLB_ACL, prop="acl_id"):
            listed = _list_entries(stack, acl)
            if listed is None:
                return None
            entries.extend(listed)
    return entries


def check_api_not_open(stack: Stack, config: Config) -> Iterator[Finding]:
    for cluster in stack.of_type(MANAGED_KUBERNETES):
        if not _public(cluster):
            continue
        entries = _whitelist(stack, cluster)
        if entries is None:
            continue
        hint = ("set slb_internet_enabled = False (reach the API server from the VPC), or bind a whitelist of the "
                "administrators' ranges to the listener on port 6443 of the cluster's slb_id")
        if not entries:
            yield cluster.urn, f"the API server has an internet-facing endpoint open to every address: {hint}"
            continue
        nets = [net for entry in entries if (net := parse_range(entry)) is not None]
        wide = too_wide(nets)
        if wide or len(nets) < len(entries):
            reason = wide or "an entry that does not parse"
            yield cluster.urn, (f"the API server is public to {', '.join(map(str, entries))}: {reason}; {hint}")


def _stack_key(stack: Stack, pool: Node, prop: str, value: Any, keys: list[Node]) -> bool:
    """Whether a key input names one of the stack's KMS keys: by the dependency the engine recorded for it, else by
    the key's id."""
    urns = pool.property_dependencies.get(prop)
    if urns:
        return any(stack.by_urn.get(urn) in keys for urn in urns)
    return any(get(key.props, "id") == value for key in keys)


def _disk_problem(where: str, args: tuple[str, str], encrypted: Any, key: Any,
                  on_stack_key: bool | None) -> Iterator[str]:
    encrypted_arg, key_arg = args
    if encrypted is UNKNOWN or key is UNKNOWN:
        return
    if as_bool(encrypted) is not True:
        yield f"{where} is not encrypted: set {encrypted_arg} = True and {key_arg} to the stack's KMS key"
    elif not (isinstance(key, str) and key.strip()):
        yield f"{where} is encrypted with the default service key: set {key_arg} to the stack's KMS key"
    elif on_stack_key is False:
        yield f"{where} is encrypted with {key}, not the stack's KMS key: set {key_arg} to the stack's key"


def _pool_disks(stack: Stack, pool: Node, keys: list[Node]) -> Iterator[str]:
    def stack_key(prop: str, value: Any) -> bool | None:
        return _stack_key(stack, pool, prop, value, keys) if keys else None

    key = get(pool.props, "systemDiskKmsKey")
    yield from _disk_problem("the system disk", ("system_disk_encrypted", "system_disk_kms_key"),
                             get(pool.props, "systemDiskEncrypted"), key, stack_key("systemDiskKmsKey", key))
    disks = items(pool.props, "dataDisks")
    for index, disk in enumerate(disks if isinstance(disks, list) else []):
        key = get(disk, "kmsKeyId")
        # The engine records dependencies per top-level input: dataDisks stands for every data disk's key.
        yield from _disk_problem(f"data_disks[{index}]", ("encrypted", "kms_key_id"), get(disk, "encrypted"), key,
                                 stack_key("dataDisks", key))


def check_pool_disks(stack: Stack, config: Config) -> Iterator[Finding]:
    keys = stack.of_type(KMS_KEY)
    for pool in stack.of_type(NODE_POOL):
        for message in _pool_disks(stack, pool, keys):
            yield pool.urn, message


RULES: list[Rule] = [
    resource_rule(
        "alicloud-ack-pro-secrets-kms",
        "ACK clusters are ACK Pro and encrypt Kubernetes secrets with a KMS key (encryption_provider_key, "
        "disable_encryption not set).",
        MANDATORY, "alicloud", [MANAGED_KUBERNETES], check_pro_secrets,
    ),
    stack_rule(
        "alicloud-ack-api-not-open",
        "The ACK API server has no internet-facing endpoint, or one that a whitelist bound to its listener limits to "
        "named ranges no wider than a /24 (IPv4) together.",
        MANDATORY, "alicloud", [MANAGED_KUBERNETES, BINDING, SLB_ACL, ACL_ENTRY], check_api_not_open,
    ),
    stack_rule(
        "alicloud-ack-pool-disks-stack-key",
        "ACK node pool system and data disks are encrypted with the stack's KMS key.",
        MANDATORY, "alicloud", [NODE_POOL, KMS_KEY], check_pool_disks,
    ),
]
