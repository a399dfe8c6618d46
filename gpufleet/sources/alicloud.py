"""Alibaba Cloud facts for `gpufleet lock resolve`: ACK's full version for a minor, the add-on versions (and their
configuration schemas) ACK offers a cluster of that version, and the newest system image matching a name.

Field names follow the SDK V2 models:
- alibabacloud_cs20151215 (7.x) models/_describe_kubernetes_version_metadata_request.py (ClusterType, Profile,
  KubernetesVersion, Region) and _describe_kubernetes_version_metadata_response.py (a JSON array of {version,
  creatable, release_date, ...}); models/_list_addons_request.py (region_id, cluster_type, profile, cluster_spec,
  cluster_version: given together) and _list_addons_response_body.py (addons[].name, version, config_schema: a JSON
  Schema as text).
- alibabacloud_ecs20140526 models DescribeImagesRequest (ImageOwnerAlias, Status, PageNumber, PageSize) and
  DescribeImagesResponseBody (Images.Image[].ImageId, ImageName, CreationTime, BootMode; TotalCount).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from ..lock.facts import BaseImageFact, ManagedVersionFact
from ..lock.versions import release_order
from .http import SourceError
from .sdk import read_time, require

T = TypeVar("T")
CLUSTER_TYPE = "ManagedKubernetes"  # ACK managed clusters, Pro included (the request model's doc)
PROFILE = "Default"  # not Edge, not Serverless
CLUSTER_SPEC = "ack.pro.small"  # ACK Pro, what components/clouds/alicloud/ack.py creates (ACK_PRO)
PAGE = 100  # DescribeImages' largest PageSize
LISTED = 10  # names a message lists


def default_cs_client(region: str, credential: Any = None, retry: Any = None) -> Any:
    """The ACK (CS 2015-12-15) client for `region`, signed through the default credential chain unless `credential`
    is given; `retry` is gpufleet.preflight.alicloud.clients.Retry (default: its defaults)."""
    return _client("alibabacloud_cs20151215.client", region, credential, retry)


def default_ecs_client(region: str, credential: Any = None, retry: Any = None) -> Any:
    """The ECS (2014-05-26) client for `region`, as default_cs_client."""
    return _client("alibabacloud_ecs20140526.client", region, credential, retry)


def _client(module: str, region: str, credential: Any, retry: Any) -> Any:
    product = require(module)
    require("alibabacloud_credentials")
    from alibabacloud_credentials.client import Client as CredentialClient
    from alibabacloud_credentials.exceptions import CredentialException
    from alibabacloud_tea_openapi.utils_models import Config

    from ..preflight.alicloud.clients import CREDENTIAL_CHAIN, Retry

    retry = retry or Retry()
    if credential is None:
        credential = CredentialClient()
        try:  # resolved here so a missing credential stops before any call
            credential.get_credential()
        except CredentialException as error:
            raise SourceError(f"no Alibaba Cloud credentials: {CREDENTIAL_CHAIN} gave none ({error}); run "
                              "`aliyun configure` or set the variables") from None
    config = Config(credential=credential, region_id=region, retry_options=retry.options(),
                    connect_timeout=retry.connect_timeout_ms, read_timeout=retry.read_timeout_ms)
    return product.Client(config)


def ack_kubernetes_version(cs: Any, region: str, minor: str, now: datetime | None = None) -> ManagedVersionFact:
    """The newest full version (e.g. 1.34.1-aliyun.1) of `minor` that ACK lets a managed cluster be created on."""
    from alibabacloud_cs20151215 import models

    source = (f"cs:DescribeKubernetesVersionMetadata Region={region} ClusterType={CLUSTER_TYPE} Profile={PROFILE} "
              f"KubernetesVersion={minor}")
    request = models.DescribeKubernetesVersionMetadataRequest(
        region=region, cluster_type=CLUSTER_TYPE, profile=PROFILE, kubernetes_version=minor)
    answer = _answer(source, "cs:DescribeKubernetesVersionMetadata",
                     lambda: cs.describe_kubernetes_version_metadata(request))
    listed = [entry.to_map() for entry in answer.body or [] if entry is not None]
    of_minor = [e for e in listed if str(e.get("version", "")).startswith(f"{minor}.")]
    # creatable absent: the API did not say otherwise, so the version is taken as offered
    offered = [str(e["version"]) for e in of_minor if e.get("creatable") is not False]
    if not offered:
        names = [f"{e.get('version')}{' (not creatable)' if e.get('creatable') is False else ''}" for e in listed]
        raise SourceError(f"{source}: ACK offers no {minor} version to create a cluster on in {region}; it lists "
                          f"{', '.join(names) or 'none'}. Move the stack's Kubernetes version to one ACK offers")
    return ManagedVersionFact(source=source, read_at=read_time(now), version=max(offered, key=release_order))


def ack_addon_versions(cs: Any, region: str, cluster_version: str, names: Sequence[str],
                       now: datetime | None = None) -> dict[str, ManagedVersionFact]:
    """The version of each add-on in `names` that ACK offers an ACK Pro cluster of `cluster_version` (a full version,
    e.g. 1.34.1-aliyun.1), with the add-on's configuration JSON Schema where ACK gives one."""
    from alibabacloud_cs20151215 import models

    source = (f"cs:ListAddons region_id={region} cluster_type={CLUSTER_TYPE} profile={PROFILE} "
              f"cluster_spec={CLUSTER_SPEC} cluster_version={cluster_version}")
    request = models.ListAddonsRequest(region_id=region, cluster_type=CLUSTER_TYPE, profile=PROFILE,
                                       cluster_spec=CLUSTER_SPEC, cluster_version=cluster_version)
    answer = _answer(source, "cs:ListAddons", lambda: cs.list_addons(request))
    body = answer.body.to_map() if answer.body is not None else {}
    addons: dict[str, dict[str, Any]] = {}
    for addon in body.get("addons") or []:
        addons.setdefault(str(addon.get("name")), addon)
    missing = [name for name in names if not addons.get(name, {}).get("version")]
    if missing:
        raise SourceError(f"{source}: ACK offers no {', '.join(missing)} for this cluster; it lists "
                          f"{', '.join(sorted(addons)) or 'no add-on'}. Check the add-on names")
    return {name: ManagedVersionFact(source=source, read_at=read_time(now), version=str(addons[name]["version"]),
                                     config_schema=_schema(addons[name].get("config_schema"), name, source))
            for name in names}


def _schema(text: Any, name: str, source: str) -> dict[str, Any] | None:
    """The add-on's config_schema, which the API gives as JSON text; none given (or empty): None."""
    if isinstance(text, dict):
        return text
    if not text:
        return None
    try:
        schema = json.loads(text)
    except ValueError as unreadable:
        raise SourceError(f"{source}: the config_schema of {name} is not JSON ({unreadable})") from None
    if not isinstance(schema, dict):
        raise SourceError(f"{source}: the config_schema of {name} is not a JSON object")
    return schema


def alicloud_base_image(ecs: Any, region: str, name_regex: str, boot_mode: str | None = None,
                        now: datetime | None = None) -> BaseImageFact:
    """The newest Available system image whose ImageName fully matches `name_regex` (and whose BootMode is
    `boot_mode`, when given), by CreationTime."""
    from alibabacloud_ecs20140526 import models

    source = f"ecs:DescribeImages RegionId={region} ImageOwnerAlias=system Status=Available"
    pattern = re.compile(name_regex)
    images: list[dict[str, Any]] = []
    page = 1
    while True:
        request = models.DescribeImagesRequest(region_id=region, image_owner_alias="system", status="Available",
                                               page_size=PAGE, page_number=page)
        answer = _answer(source, "ecs:DescribeImages", lambda request=request: ecs.describe_images(request))
        body = answer.body.to_map() if answer.body is not None else {}
        found = (body.get("Images") or {}).get("Image") or []
        images += found
        if not found or page * PAGE >= int(body.get("TotalCount") or 0):
            break
        page += 1
    named = [i for i in images if pattern.fullmatch(str(i.get("ImageName", "")))]
    fitting = [i for i in named if boot_mode is None or i.get("BootMode") == boot_mode]
    if not fitting:
        raise SourceError(f"{source}: {_none_fits(name_regex, boot_mode, images, named)}; check "
                          "base_images name_regex (and boot mode) in the lock")
    newest = max(fitting, key=lambda i: _created(i, source))
    return BaseImageFact(source=f"{source} name~{name_regex}", read_at=read_time(now), image_id=str(newest["ImageId"]),
                         name=newest.get("ImageName"), boot_mode=newest.get("BootMode"))


def _none_fits(name_regex: str, boot_mode: str | None, images: list[dict[str, Any]],
               named: list[dict[str, Any]]) -> str:
    if named:
        modes = ", ".join(f"{i.get('ImageName')} ({i.get('BootMode') or 'no BootMode'})" for i in named[:LISTED])
        return f"no image named like {name_regex} boots {boot_mode}; those named so: {modes}"
    newest = sorted(images, key=lambda i: str(i.get("CreationTime", "")), reverse=True)[:LISTED]
    listed = ", ".join(str(i.get("ImageName")) for i in newest) or "none"
    return f"no Available system image's name fully matches {name_regex} among {len(images)}; the newest: {listed}"


def _created(image: dict[str, Any], source: str) -> datetime:
    text = str(image.get("CreationTime", ""))
    try:  # ISO 8601 with Z (the API's form); Python 3.10 reads no Z
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise SourceError(f"{source}: {image.get('ImageId')} has an unreadable CreationTime {text!r}") from None



def _answer(source: str, action: str, call: Callable[[], T]) -> T:
    """The call's answer; every failure a user meets is SourceError naming the call and the fix."""
    from alibabacloud_credentials.exceptions import CredentialException
    from alibabacloud_tea_openapi.exceptions import AlibabaCloudException
    from darabonba.exceptions import RetryError
    from Tea.exceptions import UnretryableException

    from ..preflight.alicloud.clients import CREDENTIAL_CHAIN, CREDENTIALS_REFUSED, DENIED, UNKNOWN_REGION

    no_credentials = (f"{source}: no Alibaba Cloud credentials: {CREDENTIAL_CHAIN} gave none; run `aliyun "
                      "configure` or set the variables")
    try:
        return call()
    except AlibabaCloudException as error:
        data = error.data if isinstance(error.data, dict) else {}
        code, message = error.code, data.get("Message") or data.get("message") or error.message
        if code in CREDENTIALS_REFUSED:
            raise SourceError(f"{source}: Alibaba Cloud refused the credentials ({code}: {message}); refresh them "
                              f"({CREDENTIAL_CHAIN})") from None
        if code in DENIED:
            raise SourceError(f"{source}: denied ({code}: {message}); grant the caller the read-only RAM action "
                              f"{action}") from None
        if code in UNKNOWN_REGION:
            raise SourceError(f"{source}: Alibaba Cloud does not know the region ({code})") from None
        raise SourceError(f"{source}: refused ({code}: {message})") from None
    except UnretryableException as error:
        inner = error.inner_exception
        if isinstance(inner, CredentialException):
            raise SourceError(no_credentials) from None
        why = inner.message if isinstance(inner, RetryError) else str(inner)
        raise SourceError(f"{source}: no answer from Alibaba Cloud ({why}); check the network (proxy, firewall) "
                          "and the region") from None
    except CredentialException:
        raise SourceError(no_credentials) from None
