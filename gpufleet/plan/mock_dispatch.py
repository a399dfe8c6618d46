"""Answers the offline engine gives in place of the clouds: ids, computed outputs and invokes.

This module only dispatches: each cloud's answers (id and ARN shapes, invokes) live in its own
`gpufleet/clouds/<cloud>/mock_answers.py`, reached through the cloud's program (gpufleet.clouds.program), chosen
by the provider prefix of the type or invoke token.
Answers are derived from the resource's type and name, so two plans of one stack are identical. An
invoke with no local answer fails loudly rather than returning something a real run would not.
"""

from __future__ import annotations

import threading
from typing import Any

import pulumi

from ..clouds.lookup import cloud_of_resource_type
from ..clouds.mock_ids import guid
from ..clouds.program import cloud_program
from . import kubernetes_answers

PROVIDER_TYPE = "pulumi:providers:"
# Resources of cloud-neutral providers a cloud's components use (pulumiverse-time's Sleep: waits for role
# propagation on Azure; Static: the Key Vault's creation time its name carries). Their outputs are their inputs; the
# real id is the creation time (RFC 3339), unknown before `pulumi up`, so a stable stand-in takes its place.
NEUTRAL_TYPES = {"time:index/sleep:Sleep", "time:index/static:Static"}
# Python dynamic resources a cloud's components define register as `pulumi-python:dynamic/<cloud>:<Name>`: their
# create runs in the program's own provider, which the cloud's offline answers stand in for.
DYNAMIC_PREFIX = "pulumi-python:dynamic/"


def _cloud_of(typ: str) -> str | None:
    if typ.startswith(DYNAMIC_PREFIX):
        return typ[len(DYNAMIC_PREFIX):].split(":", 1)[0]
    return cloud_of_resource_type(typ)


class UnansweredInvoke(RuntimeError):
    """The program called an invoke the offline engine has no local data for."""


class OfflineMocks(pulumi.runtime.Mocks):
    """Deterministic stand-ins for providers; `region` and `zones` answer the region invokes."""

    def __init__(self, region: str, zones: list[str]) -> None:
        self.region = region
        self.zones = zones
        self._latest = threading.local()

    @property
    def last_inputs(self) -> dict[str, Any]:
        """The inputs of this thread's latest registration, as the SDK's mock monitor deserialized them: the
        recording monitor keeps them rather than deserializing the request again. Per thread, because the SDK
        registers from executor threads, several at once."""
        return self._latest.inputs

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self._latest.inputs = args.inputs
        if not args.custom:
            # Component resources: the engine gives them no id and no outputs of their own.
            return "", dict(args.inputs)
        if args.typ.startswith(PROVIDER_TYPE) or args.typ in NEUTRAL_TYPES:
            # An explicit provider (another region) or a neutral resource: a stable UUID, its inputs as outputs.
            return guid(f"{args.typ}::{args.name}"), dict(args.inputs)
        if kubernetes_answers.is_kubernetes(args.typ):
            # The kubernetes provider serves every cloud's clusters: its answers are the same on each.
            physical, outputs = kubernetes_answers.answer(args.typ, args.name, dict(args.inputs))
            return physical, outputs
        cloud = _cloud_of(args.typ)
        if cloud is None:
            raise LookupError(f"the offline engine has no answers for {args.typ}: its provider is no registered cloud")
        physical, outputs = cloud_program(cloud).mock_resource(args.typ, args.name, dict(args.inputs), self.region)
        return physical, {**args.inputs, **outputs}

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        cloud = cloud_of_resource_type(args.token)
        answer = cloud_program(cloud).mock_invoke(args.token, self.region, self.zones) if cloud else None
        if answer is None:
            raise UnansweredInvoke(f"the offline engine has no local answer for invoke {args.token}")
        return answer
