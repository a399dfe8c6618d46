"""A launch-template scaling group's size, set once its lifecycle hooks and the roles' grants exist: ESS
ModifyScalingGroup (MinSize, DesiredCapacity) from the deployer's machine, through the official SDK
(alibabacloud_ess20220222, the `preflight` extra), with the stack's alicloud provider's credentials
(deployer_credentials.py).

Why the group is sized afterwards: the provider enables a launch-template group when it creates it
(terraform-provider-alicloud 81c43b672 alicloud/resource_alicloud_ess_scaling_group.go:314-335), so it is created
with no nodes (nodegroup.py). Why not an OOS execution of a sizing template, as before: the provider's oos.Execution
waits for Success, Failed or Cancelled alike (resource_alicloud_oos_execution.go:200, all three target states), so a
sizing that failed counted as done and the group stayed empty with a green deploy; and the execution ran as the
gate's role made moments before, which RAM may not yet honour. This call is the deployer's own, answered at once:
ModifyScalingGroup succeeds or the deploy stops with its code and message.

Delete sends nothing: the size belongs to the group, which goes with its own resource.
"""

from __future__ import annotations

import os
from typing import Any

import pulumi
from pulumi.dynamic import ConfigureRequest, CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult

from .deployer_credentials import credential, provider_settings, service_endpoint

SIZE_TYPE = "pulumi-python:dynamic/alicloud:ScalingGroupSize"
FIELDS = ("scaling_group_id", "min_size", "desired_capacity", "region")
# Another group (or region) is another size; a new min or desired is the same group resized.
REPLACED_BY = ("scaling_group_id", "region")


class SizingRefused(RuntimeError):
    """Auto Scaling did not take the group's size."""


class ScalingGroupSizeProvider(ResourceProvider):
    """ModifyScalingGroup on create and update. `credential` and `endpoint` are for tests (a static key, every call to
    one host whose answers are recorded); a deploy signs with the provider's credentials at its ESS endpoint
    (its endpoints block's, else the region's)."""

    def __init__(self, credential: Any = None, endpoint: str | None = None) -> None:
        super().__init__()
        self.credential, self.endpoint, self.settings = credential, endpoint, {}

    def configure(self, req: ConfigureRequest) -> None:
        self.settings = provider_settings(req.config, dict(os.environ))

    def _size(self, props: dict[str, Any]) -> None:
        from alibabacloud_ess20220222.client import Client
        from alibabacloud_ess20220222.models import ModifyScalingGroupRequest
        from alibabacloud_tea_openapi.exceptions import AlibabaCloudException
        from alibabacloud_tea_openapi.utils_models import Config

        signer = self.credential if self.credential is not None else credential(self.settings)
        endpoint = self.endpoint or service_endpoint(self.settings, "ess")
        client = Client(Config(credential=signer, region_id=props["region"], endpoint=endpoint))
        request = ModifyScalingGroupRequest(scaling_group_id=props["scaling_group_id"], min_size=int(props["min_size"]),
                                            desired_capacity=int(props["desired_capacity"]))
        try:
            client.modify_scaling_group(request)
        except AlibabaCloudException as error:
            raise SizingRefused(
                f"ESS ModifyScalingGroup on {props['scaling_group_id']} (MinSize {props['min_size']}, DesiredCapacity "
                f"{props['desired_capacity']}) refused: {error.code} ({error.message}); the group launches no node "
                "until it is sized: fix the cause and run `pulumi up` again") from None

    def create(self, props: dict[str, Any]) -> CreateResult:
        self._size(props)
        return CreateResult(id_=props["scaling_group_id"], outs=dict(props))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        self._size(news)
        return UpdateResult(outs=dict(news))

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        return None

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [key for key in FIELDS if olds.get(key) != news.get(key)]
        replaces = [key for key in changed if key in REPLACED_BY]
        return DiffResult(changes=bool(changed), replaces=replaces, delete_before_replace=False)


class ScalingGroupSize(Resource, module="alicloud", name="ScalingGroupSize"):
    """A launch-template group's min size and desired capacity (see the module's docstring)."""

    def __init__(self, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions) -> None:
        super().__init__(ScalingGroupSizeProvider(), name, props, opts)
