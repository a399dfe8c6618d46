"""Answers the offline engine gives in place of the clouds: ids, computed outputs and invokes.

This module only dispatches: each cloud's answers (id and ARN shapes, invokes) live in its own
`components/clouds/<cloud>/mocks.py`, chosen by the provider prefix of the type or invoke token.
Answers are derived from the resource's type and name, so two plans of one stack are identical. An
invoke with no local answer fails loudly rather than returning something a real run would not.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pulumi

from ..clouds.aws import mocks as aws_mocks

# Provider prefix -> that cloud's answers: new_resource(typ, name, inputs, region) and
# invoke(token, region, zones).
CLOUD_MOCKS: dict[str, ModuleType] = {"aws": aws_mocks}


class UnansweredInvoke(RuntimeError):
    """The program called an invoke the offline engine has no local data for."""


def _provider(token: str) -> str:
    return token.split(":", 1)[0]


class OfflineMocks(pulumi.runtime.Mocks):
    """Deterministic stand-ins for providers; `region` and `zones` answer the region invokes."""

    def __init__(self, region: str, zones: list[str]) -> None:
        self.region = region
        self.zones = zones

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        if not args.custom:
            # Component resources: the engine gives them no id and no outputs of their own.
            return "", dict(args.inputs)
        cloud = CLOUD_MOCKS.get(_provider(args.typ))
        if cloud is None:
            raise LookupError(f"the offline engine has no answers for {args.typ}'s provider; add its cloud's mocks")
        physical, outputs = cloud.new_resource(args.typ, args.name, dict(args.inputs), self.region)
        return physical, {**args.inputs, **outputs}

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        cloud = CLOUD_MOCKS.get(_provider(args.token))
        answer = cloud.invoke(args.token, self.region, self.zones) if cloud else None
        if answer is None:
            raise UnansweredInvoke(f"the offline engine has no local answer for invoke {args.token}")
        return answer
