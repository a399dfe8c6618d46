"""The pack derives its settings from the stack it checks: `pulumi up --policy-pack policies` needs no config file.

The Pulumi CLI starts the analyzer and calls ConfigureStack with the stack's name and its decrypted config before
Configure (pulumi/pulumi sdk/go/common/resource/plugin/analyzer_plugin.go NewPolicyAnalyzer:
AnalyzerStackConfigureRequest{Stack, Project, Config}; pkg/engine/update.go: GetAnalyzerInfo,
ReconcilePolicyPackConfig, then Configure, which runs with or without --policy-pack-config). pulumi_policy's
servicer keeps only the stack's tags from ConfigureStack, so the servicer below also keeps its config and, in
Configure, replaces what the CLI reconciled with the settings `gpufleet policy-config` derives for the stack
(gpufleet/pack_config/derive.py, the code `gpufleet plan` runs). A --policy-pack-config file may still tighten
them: an entry that differs from the pack's own defaults is laid on as one more layer that only tightens
(gpufleet.pack_config.tighten); one that would loosen stops the run.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import policy as sdk

from gpufleet.pack_config.derive import policy_pack_config
from gpufleet.pack_config.floor import bound_stack
from gpufleet.pack_config.settings import RANK, PolicySetting, resolve_config
from gpufleet.pack_config.tighten import tighten
from gpufleet.prepare import prepare
from gpufleet.stackfile import CLUSTER_KEY, IMAGES_KEY, POLICY_KEY, load_stack, stack_path
from gpufleet.stackfile.read import PROJECT, STACKS_DIR, resolve_extends

from .props import shared_reads
from .read_once import reading_once
from .registry import ALL_POLICIES, declared_types

# Keys whose values the CLI sends as JSON text (object config); provider keys such as aws:region are plain text.
OBJECT_KEYS = (CLUSTER_KEY, IMAGES_KEY, POLICY_KEY)


def _plain(value: Any) -> Any:
    """A protobuf Struct or ListValue as plain data: their well-known-type mixins give Python scalars."""
    kind = getattr(getattr(value, "DESCRIPTOR", None), "full_name", "")
    if kind == "google.protobuf.Struct":
        return {key: _plain(item) for key, item in value.items()}
    if kind == "google.protobuf.ListValue":
        return [_plain(item) for item in value]
    return value


def stack_config(stack: str, sent: Mapping[str, str]) -> dict[str, Any] | None:
    """The stack's config as the program reads it: what the CLI sent (objects as JSON text), else the stack file of
    this checkout for a CLI that sends none; None when neither is a gpufleet stack."""
    if any(key in sent for key in OBJECT_KEYS) or "gpufleet:template" in sent:
        config: dict[str, Any] = {k: json.loads(v) if k in OBJECT_KEYS else v for k, v in sent.items()}
        if CLUSTER_KEY not in config and IMAGES_KEY not in config:  # a `pulumi new` stack (program.from_template)
            fields = {"extends": "gpufleet:template", "cloud": "gpufleet:cloud", "region": "gpufleet:region"}
            config[CLUSTER_KEY] = {field: config[key] for field, key in fields.items() if key in config}
        return resolve_extends(config, STACKS_DIR)
    path = stack_path(STACKS_DIR, stack)
    return load_stack(path, STACKS_DIR) if stack and path.is_file() else None


def _gpufleet_keys(config: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in config.items() if key.startswith("gpufleet:")}


def bound_name(stack: str, project: str, config: Mapping[str, Any]) -> str | None:
    """The stack name organisation exceptions may grant: only for this project's stack whose file in this checkout's
    stacks/ says what the CLI sent (another project's stack of the same name, or a file changed elsewhere, gets
    none: an exception binds to the project's stack file, policy_floor.bound_stack)."""
    path = stack_path(STACKS_DIR, stack) if stack else None
    if project != PROJECT or path is None or not path.is_file() or bound_stack(path) is None:
        return None
    return stack if _gpufleet_keys(load_stack(path, STACKS_DIR)) == _gpufleet_keys(config) else None


def derived_settings(stack: str, sent: Mapping[str, str], project: str = PROJECT) -> dict[str, PolicySetting] | None:
    """Each policy's level and settings for the stack, as `gpufleet plan` runs them; None for a non-gpufleet stack."""
    config = stack_config(stack, sent)
    if config is None:
        return None
    return resolve_config(ALL_POLICIES, policy_pack_config(config, prepare(config), bound_name(stack, project, config)))


def tightened(derived: dict[str, PolicySetting], given: dict[str, PolicySetting]) -> dict[str, PolicySetting]:
    """`derived` with what a config file says beyond the pack's defaults laid on: levels only rise, settings only
    tighten (a loosening entry raises SpecInvalid, which fails the CLI's Configure call with the field named)."""
    defaults = resolve_config(ALL_POLICIES, {})
    out = {}
    for name, setting in derived.items():
        file, default = given.get(name, defaults[name]), defaults[name]
        level = max(setting.level, file.level, key=RANK.__getitem__) if file.level != default.level else setting.level
        extra = {k: v for k, v in file.properties.items() if default.properties.get(k) != v}
        out[name] = PolicySetting(level, tighten(name, setting.properties, extra, f"policy config.{name}"))
    return out


class DerivingServicer(sdk._PolicyAnalyzerServicer):  # the SDK serves the pack through this class only
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stack, self._project, self._sent = "", "", {}
        self._analyzing = threading.local()  # the type of the resource an Analyze call on this thread checks

    def Analyze(self, request: Any, context: Any) -> Any:  # noqa: N802
        """The SDK's Analyze, calling only the rules that read the resource's type. The SDK turns the resource's
        properties into Python again for every rule it calls, ~70 per resource, whether or not the rule looks at
        that type: seconds for a Kubernetes CRD. A rule of another type reports nothing (meta.resource_rule), so
        leaving it out changes no verdict; the offline runner calls the same rules (policy_runner.run_policies)."""
        self._analyzing.type = request.type
        try:
            with reading_once(), shared_reads():
                return super().Analyze(request, context)
        finally:
            self._analyzing.type = None

    def AnalyzeStack(self, request: Any, context: Any) -> Any:  # noqa: N802
        """The SDK's AnalyzeStack, reading each resource's properties once for all stack rules (read_once.py)."""
        with reading_once(), shared_reads():
            return super().AnalyzeStack(request, context)

    def _get_enforcement_level(self, policy: Any) -> Any:
        level = super()._get_enforcement_level(policy)
        checked = getattr(self._analyzing, "type", None)
        wanted = declared_types(policy) if checked is not None else None
        if wanted is not None and checked not in wanted:
            return sdk.EnforcementLevel.DISABLED
        return level

    def ConfigureStack(self, request: Any, context: Any) -> Any:  # noqa: N802 (the gRPC method's name)
        self._stack, self._project, self._sent = request.stack, request.project, dict(request.config)
        return super().ConfigureStack(request, context)

    def Configure(self, request: Any, context: Any) -> Any:  # noqa: N802
        derived = derived_settings(self._stack, self._sent, self._project)
        if derived is not None:
            given = {name: PolicySetting(analyzer_pb2.EnforcementLevel.Name(entry.enforcementLevel).lower(),
                                         _plain(entry.properties))
                     for name, entry in request.policyConfig.items()}
            request = analyzer_pb2.ConfigureAnalyzerRequest()
            for name, setting in tightened(derived, given).items():
                request.policyConfig[name].enforcementLevel = analyzer_pb2.EnforcementLevel.Value(setting.level.upper())
                request.policyConfig[name].properties.update(setting.properties)
        return super().Configure(request, context)
