"""The node's instance type from its cloud's metadata service (AWS IMDSv2, Azure IMDS, Alibaba metadata)."""

from __future__ import annotations

import json
import urllib.request
from urllib.error import URLError

_TIMEOUT_S = 2
ALICLOUD_METADATA = "http://100.100.100.200/latest"


def _get(url: str, headers: dict[str, str] | None = None, method: str = "GET") -> str:
    request = urllib.request.Request(url, headers=headers or {}, method=method)
    with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as response:  # noqa: S310 - fixed link-local URLs
        return response.read().decode().strip()


def _aws() -> str:
    token = _get(
        "http://169.254.169.254/latest/api/token",
        {"X-aws-ec2-metadata-token-ttl-seconds": "60"}, method="PUT",
    )
    return _get("http://169.254.169.254/latest/meta-data/instance-type", {"X-aws-ec2-metadata-token": token})


def _azure() -> str:
    url = "http://169.254.169.254/metadata/instance/compute?api-version=2021-02-01"
    body = _get(url, {"Metadata": "true"})
    return json.loads(body)["vmSize"]


def _alicloud() -> str:
    # Security hardening mode (launch templates set http_tokens required): a session token on every read
    # (ECS user guide, view-instance-metadata; TTL 1 to 21600 s).
    token = _get(f"{ALICLOUD_METADATA}/api/token", {"X-aliyun-ecs-metadata-token-ttl-seconds": "60"}, method="PUT")
    return _get(f"{ALICLOUD_METADATA}/meta-data/instance/instance-type", {"X-aliyun-ecs-metadata-token": token})


def instance_type_from_metadata() -> str | None:
    """Ask each cloud's metadata service in turn; None when none answers."""
    for probe in (_aws, _azure, _alicloud):
        try:
            found = probe()
        except (URLError, OSError, ValueError, KeyError):
            continue
        if found:
            return found
    return None
