"""AWS-owned public SSM parameters and AMIs under moto, for tests of what reads them (`lock resolve`'s base images)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from moto.core import DEFAULT_ACCOUNT_ID
from moto.ssm.models import Parameter, ssm_backends


def publish(name: str, value: str, region: str, when: datetime) -> None:
    """A new version of an AWS-owned public parameter, added the way moto adds AWS's own
    (moto/ssm/models.py ParameterDict._load_latest_amis): PutParameter refuses names under /aws, as AWS does."""
    versions = ssm_backends[DEFAULT_ACCOUNT_ID][region]._parameters[name]
    versions.append(Parameter(account_id=DEFAULT_ACCOUNT_ID, name=name, value=value, parameter_type="String",
                              description=None, allowed_pattern=None, keyid=None, last_modified_date=when,
                              version=len(versions) + 1, data_type="aws:ec2:image"))


def register(ec2: Any, name: str) -> str:
    return str(ec2.register_image(Name=name, RootDeviceName="/dev/sda1")["ImageId"])
