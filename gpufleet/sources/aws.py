"""AWS facts for `gpufleet lock resolve`: EKS add-on versions per Kubernetes minor and the AMI behind an SSM parameter.

Field names follow botocore's service models (botocore/data/eks/2017-11-01/service-2.json: DescribeAddonVersions
-> addons[].addonVersions[].addonVersion, compatibilities[].clusterVersion / defaultVersion, nextToken;
ssm/2014-11-06: GetParameter -> Parameter.Value; ec2/2016-11-15: DescribeImages -> Images[].ImageId, Name, BootMode).
The clients are boto3's, so the usual settings apply (AWS_PROFILE, AWS_REGION, AWS_ENDPOINT_URL and
AWS_ENDPOINT_URL_<SERVICE>).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from ..lock.facts import BaseImageFact, ManagedVersionFact
from ..lock.versions import release_key, release_order
from .http import SourceError
from .sdk import read_time, require

T = TypeVar("T")
SSM_PREFIX = "ssm:"  # images/lock.yaml base_images parent_image: Image Builder's form of a parameter
AMI_ID = re.compile(r"ami-[0-9a-f]{8,17}")
# An EKS AMI release: <Kubernetes version>-<build date> (EKS NodeGroup releaseVersion, e.g. 1.14.9-20201007 in the
# Systems Manager user guide's example).
RELEASE = re.compile(r"1\.[0-9]+\.[0-9]+-[0-9]{8}")
LISTED = 12  # versions named in a message


def default_eks_client(region: str) -> Any:
    """EKS for `region` through boto3's default credential chain and endpoint settings."""
    return _client("eks", region)


def default_ssm_client(region: str) -> Any:
    """SSM for `region` through boto3's default credential chain and endpoint settings."""
    return _client("ssm", region)


def default_ec2_client(region: str) -> Any:
    """EC2 for `region` through boto3's default credential chain and endpoint settings."""
    return _client("ec2", region)


def _client(service: str, region: str) -> Any:
    boto3 = require("boto3")
    from ..preflight.aws.clients import CONFIG  # standard retries, bounded connect and read time

    return boto3.Session(region_name=region).client(service, region_name=region, config=CONFIG)


def eks_addon_versions(eks: Any, minor: str, names: Sequence[str], floors: Mapping[str, str] | None = None,
                       now: datetime | None = None) -> dict[str, ManagedVersionFact]:
    """Each add-on's default version for clusters of `minor` (the version whose compatibilities entry for that
    clusterVersion says defaultVersion), checked against its floor in `floors` (e.g. vpc-cni: v1.18.5)."""
    region = eks.meta.region_name
    facts: dict[str, ManagedVersionFact] = {}
    for name in names:
        source = f"eks:DescribeAddonVersions addonName={name} kubernetesVersion={minor} ({region})"
        listed, defaults = _addon_versions(eks, source, name, minor)
        if len(set(defaults)) != 1:
            found = f"defaults {', '.join(defaults)}" if defaults else "no default"
            raise SourceError(f"{source}: EKS marks {found} for {name} on Kubernetes {minor} among the versions it "
                              f"lists ({_listed(listed)}); resolve again later or pin the add-on by hand with its "
                              "source")
        version = defaults[0]
        floor = (floors or {}).get(name)
        if floor is not None and _below(version, floor, source):
            raise SourceError(f"{source}: the default {version} of {name} is below its floor {floor}, which gpufleet "
                              f"needs; versions listed: {_listed(listed)}. Pin one at or above {floor} by hand with "
                              "its source")
        facts[name] = ManagedVersionFact(source=source, read_at=read_time(now), version=version, default=True)
    return facts


def _addon_versions(eks: Any, source: str, name: str, minor: str) -> tuple[list[str], list[str]]:
    """(every version listed for the minor, the ones marked default for it), across all pages."""
    def pages() -> list[dict[str, Any]]:
        paginator = eks.get_paginator("describe_addon_versions")
        return list(paginator.paginate(addonName=name, kubernetesVersion=minor))

    listed: list[str] = []
    defaults: list[str] = []
    for page in _answer(source, "eks:DescribeAddonVersions", pages) or []:
        for addon in page.get("addons", []):
            if addon.get("addonName") != name:
                continue
            for entry in addon.get("addonVersions", []):
                for compatibility in entry.get("compatibilities", []):
                    if compatibility.get("clusterVersion") != minor:
                        continue
                    listed.append(entry["addonVersion"])
                    if compatibility.get("defaultVersion"):
                        defaults.append(entry["addonVersion"])
    if not listed:
        raise SourceError(f"{source}: EKS lists no version of {name} for Kubernetes {minor}; check the add-on name "
                          "(aws eks describe-addon-versions --query 'addons[].addonName') and the minor")
    return listed, defaults


def _below(version: str, floor: str, source: str) -> bool:
    try:
        return release_key(version) < release_key(floor)
    except ValueError as unreadable:
        raise SourceError(f"{source}: cannot compare {version} with the floor {floor} ({unreadable})") from None


def _listed(versions: Sequence[str]) -> str:
    newest = sorted(set(versions), key=release_order, reverse=True)
    more = f" and {len(newest) - LISTED} older" if len(newest) > LISTED else ""
    return ", ".join(newest[:LISTED]) + more



def ssm_base_image(ssm: Any, ec2: Any, parameter: str, now: datetime | None = None) -> BaseImageFact:
    """The AMI an SSM parameter names now (e.g. Canonical's public Ubuntu parameters), with the image's name and
    boot mode (absent on AMIs registered without one: None)."""
    name = parameter[len(SSM_PREFIX):] if parameter.startswith(SSM_PREFIX) else parameter
    region = ssm.meta.region_name
    source = f"ssm:GetParameter Name={name} ({region})"
    answer = _answer(source, "ssm:GetParameter", lambda: ssm.get_parameter(Name=name), missing="ParameterNotFound")
    if answer is None:
        raise SourceError(f"{source}: SSM has no parameter {name} in {region}; check the lock's parent_image and "
                          "the region (public parameters are per region)")
    image_id = str(answer["Parameter"]["Value"])
    if not AMI_ID.fullmatch(image_id):
        raise SourceError(f"{source}: the parameter holds {image_id!r}, not an AMI id")
    source = f"{source} -> ec2:DescribeImages ImageIds={image_id}"
    found = _answer(source, "ec2:DescribeImages", lambda: ec2.describe_images(ImageIds=[image_id]),
                    missing="InvalidAMIID.")
    images = [i for i in (found or {}).get("Images", []) if i.get("ImageId") == image_id]
    if not images:
        raise SourceError(f"{source}: EC2 in {region} describes no image {image_id}, which the parameter names "
                          "(deregistered, or not shared with this account)")
    image = images[0]
    return BaseImageFact(source=source, read_at=read_time(now), image_id=image_id, name=image.get("Name"),
                         boot_mode=image.get("BootMode"))


def ssm_release_version(ssm: Any, parameter: str, now: datetime | None = None) -> ManagedVersionFact:
    """The release an EKS public parameter names now (.../recommended/release_version: e.g. 1.35.0-20251120)."""
    region = ssm.meta.region_name
    source = f"ssm:GetParameter Name={parameter} ({region})"
    answer = _answer(source, "ssm:GetParameter", lambda: ssm.get_parameter(Name=parameter),
                     missing="ParameterNotFound")
    if answer is None:
        raise SourceError(f"{source}: SSM has no parameter {parameter} in {region}: EKS publishes none for this "
                          "Kubernetes minor there (check scheduler.version and the region)")
    value = str(answer["Parameter"]["Value"]).strip()
    if not RELEASE.fullmatch(value):
        raise SourceError(f"{source}: the parameter holds {value!r}, not a release like 1.35.0-20251120")
    return ManagedVersionFact(source=source, read_at=read_time(now), version=value)


def _answer(source: str, action: str, call: Callable[[], T], missing: str | None = None) -> T | None:
    """The call's answer; None for an error code starting with `missing` (what was asked for does not exist); every
    other failure a user meets is SourceError naming the call and the fix."""
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    from ..preflight.aws.clients import CREDENTIAL_CODES, DENIED_CODES, NO_CREDENTIALS, error_code

    try:
        return call()
    except NoCredentialsError:
        raise SourceError(f"{source}: {NO_CREDENTIALS}") from None
    except ClientError as error:
        code = error_code(error)
        message = error.response.get("Error", {}).get("Message", "")
        if missing is not None and code.startswith(missing):
            return None
        if code in CREDENTIAL_CODES:
            raise SourceError(f"{source}: AWS refused the credentials ({code}: {message}); sign in again "
                              "(aws sso login, or fresh keys) and resolve again") from None
        if code in DENIED_CODES:
            raise SourceError(f"{source}: access denied ({code}: {message}); allow the read-only action {action} "
                              "to the caller") from None
        raise SourceError(f"{source}: AWS answered {code}: {message}") from None
    except BotoCoreError as error:  # no endpoint, a timeout, retries spent
        raise SourceError(f"{source}: no answer from AWS ({error}); check the network, the region and "
                          "AWS_ENDPOINT_URL if set") from None
