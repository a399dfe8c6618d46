"""An AWS account for preflight tests: moto in process behind the real boto3 clients, plus what moto lacks.

moto answers EC2, IAM, KMS, SNS and STS itself. Its Service Quotas knows only the VPC quotas, so EC2 quotas are
served by patching its backend's get_service_quota (the answer still goes through moto's JSON response and
boto3's parsing). moto has no DescribeCapacityReservations and no Cost Explorer ListCostAllocationTags: those are
answered by botocore's Stubber on a real client, which checks each request and response against the service
model (`stubbed`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.stub import Stubber
from conftest import read_cluster
from moto import mock_aws
from moto.core.botocore_stubber import MockRawResponse
from moto.servicequotas.exceptions import NoSuchResource
from moto.servicequotas.models import ServiceQuotasBackend
from moto.servicequotas.responses import ServiceQuotasResponse

from gpufleet.clouds.backend import ResolvedCluster
from gpufleet.lock import load_lock
from gpufleet.lock.model import ImageEntry
from gpufleet.preflight.aws import quotas
from gpufleet.preflight.aws.clients import CONFIG, AwsClients
from gpufleet.resolve import resolve_cluster

REGION = "us-east-1"
PROFILE = "cuda12.8-r580"
NAMES = {q.code: q.names[0] for q in (quotas.P_ON_DEMAND, quotas.G_ON_DEMAND, quotas.G_SPOT, quotas.P2_TO_P4_SPOT)}
# The code an account would give the P5 spot quota (found there by name; no source gave the real one).
P5_SPOT_TEST_CODE = "L-0000TEST"


def on_demand_group(**changes: Any) -> dict[str, Any]:
    """aws-train-p5's group on-demand: 16 x p5.48xlarge (192 vCPUs each) at size.max."""
    group = {"name": "h100", "instance_types": ["p5.48xlarge"], "size": {"min": 0, "desired": 2, "max": 16},
             "capacity": "on-demand", "rdma": "required"}
    return {**group, **changes}


def patch_quotas(monkeypatch: pytest.MonkeyPatch, quotas: dict[str, tuple[str, float]]) -> None:
    """EC2 quotas by code: (QuotaName, Value), for GetServiceQuota and ListServiceQuotas (which moto lacks: added
    to its response class, answered in the API's shape); any other code is NoSuchResourceException."""

    def quota(code: str) -> dict[str, Any]:
        name, value = quotas[code]
        return {"ServiceCode": "ec2", "QuotaCode": code, "QuotaName": name, "Value": value,
                "Unit": "None", "Adjustable": True, "GlobalQuota": False}

    def get_service_quota(self: ServiceQuotasBackend, service_code: str, quota_code: str) -> dict[str, Any]:
        if service_code != "ec2" or quota_code not in quotas:
            raise NoSuchResource
        return quota(quota_code)

    def list_service_quotas(self: ServiceQuotasResponse) -> str:
        if json.loads(self.body).get("ServiceCode") != "ec2":
            raise NoSuchResource
        return json.dumps({"Quotas": [quota(code) for code in sorted(quotas)]})

    monkeypatch.setattr(ServiceQuotasBackend, "get_service_quota", get_service_quota)
    monkeypatch.setattr(ServiceQuotasResponse, "list_service_quotas", list_service_quotas, raising=False)


def real_client(service: str, region: str = REGION) -> Any:
    return boto3.client(service, region_name=region, config=CONFIG)


@pytest.fixture(scope="module")
def moto() -> Iterator[None]:
    """One moto account for a test module (starting EC2's takes most of a second); tests make their own
    resources in it."""
    with mock_aws():
        yield


@contextmanager
def moto_account(overrides: dict[str, Any] | None = None,
                 hook: Callable[[str, Any], None] | None = None) -> Iterator[AwsClients]:
    """New clients on the moto account (the `moto` fixture must be active); `overrides` replaces a service's
    client (a stubbed one), `hook` sees every client made (to register event handlers)."""
    overrides = overrides or {}

    def make(service: str, region: str) -> Any:
        client = overrides.get(service) or real_client(service, region)
        if hook is not None:
            hook(service, client)
        return client

    yield AwsClients(REGION, make, source="test credentials")


def stubbed(service: str) -> tuple[Any, Stubber]:
    """A real client whose answers come from a Stubber (never the network: the stubber answers or fails)."""
    client = boto3.client(service, region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing",
                          config=CONFIG)
    return client, Stubber(client)


def cost_tag_client(status: str | None = "Active") -> Any:
    """Cost Explorer answering ListCostAllocationTags for the cluster tag (any number of calls)."""
    client, stub = stubbed("ce")
    tags = [] if status is None else [{"TagKey": "gpufleet:cluster", "Type": "UserDefined", "Status": status}]
    for _ in range(5):
        stub.add_response("list_cost_allocation_tags", {"CostAllocationTags": tags},
                          {"TagKeys": ["gpufleet:cluster"], "Type": "UserDefined"})
    stub.activate()
    return client


def baked_lock(ami: str) -> Any:
    """The shipped lock with the test profile baked in us-east-1 as `ami`."""
    lock = load_lock().model_copy(deep=True)
    lock.profiles[PROFILE].images["aws"][REGION] = ImageEntry(id=ami, status="baked")
    return lock


def owned_ami(clients: AwsClients) -> str:
    """An available AMI of the account, as a bake leaves it (moto ids: ami- and 17 hex digits, the lock's form)."""
    return str(clients("ec2").register_image(Name="gpufleet-bake", RootDeviceName="/dev/sda1")["ImageId"])


def train_cluster(lock: Any = None, **changes: Any) -> ResolvedCluster:
    """aws-train-p5 resolved with top-level `changes` (a None value removes the field)."""
    raw = copy.deepcopy(read_cluster("aws-train-p5"))
    for key, value in changes.items():
        if value is None:
            raw.pop(key, None)
        else:
            raw[key] = value
    return resolve_cluster(raw, lock=lock)


def throttle(operation_event: str, times: int, calls: list[str]) -> Callable[[str, Any], None]:
    """A hook answering `operation_event` (e.g. before-send.service-quotas.GetServiceQuota) with a throttling error
    `times` times, then letting moto answer; `calls` records each attempt."""

    def answer(request: Any, **_: Any) -> AWSResponse | None:
        calls.append(request.url)
        if len(calls) > times:
            return None
        body = '{"__type": "TooManyRequestsException", "message": "Rate exceeded"}'
        return AWSResponse(request.url, 400, {"Content-Type": "application/x-amz-json-1.1"}, MockRawResponse(body))

    def hook(service: str, client: Any) -> None:
        client.meta.events.register(operation_event, answer)

    return hook
