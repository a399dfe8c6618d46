"""Each text pattern a stack field takes, in words: a refused value is told what the field looks like, never the
regular expression. test_fuzz_leftovers.py checks every pattern of `gpufleet schema` is listed here."""

from __future__ import annotations

_OCTET = r"(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
# The editor schema's form of pydantic's ipv4network: a dotted quad, optionally with a /0-32 prefix length.
IPV4_NETWORK_PATTERN = rf"^{_OCTET}(\.{_OCTET}){{3}}(/(3[0-2]|[12]?[0-9]))?$"
_AZURE_ID = "an Azure resource id: /subscriptions/<subscription id>/resourceGroups/<group>/providers/"
PATTERN_WORDS: dict[str, str] = {
    r"\S": "must contain something other than spaces",
    IPV4_NETWORK_PATTERN: "must be an IPv4 network such as 10.0.0.0/16",
    r"^(create|https://.+)$": "must be `create` or an https:// URL",
    r"^create$|^https://[-a-zA-Z0-9]{3,24}\.vault\.azure\.net/keys/[-a-zA-Z0-9]{1,127}/[0-9a-f]{32}$":
        "must be `create` or a versioned Key Vault key id: https://<vault>.vault.azure.net/keys/<key>/<32 hex version>",
    r"^(ssh-rsa|ssh-ed25519|ecdsa-sha2-nistp\d+) [A-Za-z0-9+/=]+( .*)?$":
        "must be an OpenSSH public key line: ssh-ed25519, ssh-rsa or ecdsa-sha2-nistpNNN, a space, the base64 key",
    r"^/[A-Za-z0-9._/-]*$": "must be an absolute path of letters, digits, '.', '_', '-' and '/' (e.g. /data)",
    r"^/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[-A-Za-z0-9_.()]{1,90}/providers/Microsoft\.KeyVault/vaults/"
    r"[-a-zA-Z0-9]{3,24}$": _AZURE_ID + "Microsoft.KeyVault/vaults/<vault name>",
    r"^/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[-A-Za-z0-9_.()]{1,90}/providers/Microsoft\.ManagedIdentity/"
    r"userAssignedIdentities/[-A-Za-z0-9_]{3,128}$":
        _AZURE_ID + "Microsoft.ManagedIdentity/userAssignedIdentities/<identity name>",
    r"^/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[-A-Za-z0-9_.()]{1,90}/providers/Microsoft\.Storage/"
    r"storageAccounts/[a-z0-9]{3,24}/blobServices/default/containers/[a-z0-9-]{3,63}$":
        _AZURE_ID + "Microsoft.Storage/storageAccounts/<account>/blobServices/default/containers/<container>",
    r"^/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[-A-Za-z0-9_.()]{1,90}/providers/[A-Za-z0-9.]+/"
    r"[-A-Za-z0-9_./]+$": _AZURE_ID + "<provider namespace>/<type>/<name>",
    r"^[-A-Za-z0-9_.()]{1,90}$": "must be 1 to 90 letters, digits, '-', '_', '.', '(' or ')'",
    r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$": "must be an e-mail address (name@example.com)",
    r"^all-([1-7]g\.[0-9]+gb|balanced)$":
        "must be a MIG configuration name: all-<N>g.<M>gb (e.g. all-1g.10gb) or all-balanced",
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$":
        "must be a Kubernetes label key: an optional DNS prefix and '/', then 1 to 63 letters, digits, '-', '_', '.'",
    r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$":
        "must be a Kubernetes label value: empty, or 1 to 63 letters, digits, '-', '_', '.' starting and ending "
        "with a letter or digit",
    r"^1\.[0-9]{1,2}$": "must be a Kubernetes minor version like 1.35",
    r"^[A-Za-z0-9.-]{1,64}$": "must be 1 to 64 letters, digits, '.' or '-'",
    r"^[a-z][a-z0-9-]{0,30}[a-z0-9]$":
        "must be 2 to 32 lower-case letters, digits and dashes, starting with a letter and not ending with a dash",
    r"^sg-[0-9a-f]{8,17}$": "must be a security group id: sg- and 8 to 17 hex digits",
    r"^sg-[0-9a-z]{8,32}$": "must be a security group id: sg- and 8 to 32 lower-case letters or digits",
    r"^subnet-[0-9a-f]{8,17}$": "must be a subnet id: subnet- and 8 to 17 hex digits",
    r"^kst-[0-9a-z]{8,40}$": "must be a KMS instance id: kst- and 8 to 40 lower-case letters or digits",
    r"^vpc-[0-9a-f]{8,17}$": "must be a VPC id: vpc- and 8 to 17 hex digits",
    r"^vpc-[0-9a-z]{8,32}$": "must be a VPC id: vpc- and 8 to 32 lower-case letters or digits",
}


def pattern_in_words(pattern: str) -> str:
    """What a value of `pattern` looks like; a pattern not listed still never shows its regular expression."""
    return PATTERN_WORDS.get(pattern, "is not in the form the field takes (`gpufleet schema` describes it)")
