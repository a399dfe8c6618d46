"""Run a Pulumi program in-process under the mock engine and record every resource it registers."""

from __future__ import annotations

import asyncio
import copy
import functools
import json
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, TypeVar

import pulumi
from pulumi.runtime import mocks, settings
from pulumi.runtime.settings import get_project, get_stack
from pulumi.runtime.stack import run_pulumi_func

from .mock_dispatch import OfflineMocks
from .record import RecordedResource

T = TypeVar("T")
STACK_TYPE = "pulumi:pulumi:Stack"


class DuplicateUrn(pulumi.RunError):
    """Two registrations with one URN: the engine refuses the second, so the offline engine does too."""


def engine_urn(stack: str, project: str, parent: str, type_: str, name: str) -> str:
    """The URN the Pulumi engine gives a resource: its type qualified by the parent's whole type chain,
    the root stack's type left out (resource.NewURN in the engine)."""
    qualified = type_
    if parent:
        parent_type = parent.split("::")[2]
        if parent_type != STACK_TYPE:
            qualified = f"{parent_type}${type_}"
    return f"urn:pulumi:{stack}::{project}::{qualified}::{name}"


class RecordingMonitor(mocks.MockMonitor):
    """The SDK's mock monitor with the engine's URNs, keeping what each RegisterResource request carried."""

    def __init__(self, offline: OfflineMocks) -> None:
        super().__init__(offline)
        self.recorded: list[RecordedResource] = []
        self.urns: set[str] = set()
        self.duplicates: list[str] = []
        self.outputs: dict[str, tuple[str, ...]] = {}

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        return engine_urn(get_stack(), get_project(), parent, type_, name)

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        urn = self.make_urn(request.parent, request.type, request.name)
        duplicate = urn in self.urns
        if duplicate:
            # Refused once the program has finished: raising here would leave the SDK's futures of this
            # resource failed and unread, which asyncio reports as tracebacks.
            self.duplicates.append(f"Duplicate resource URN '{urn}'; try giving it a unique name")
        self.urns.add(urn)
        response = super().RegisterResource(request)
        if request.type != STACK_TYPE and not duplicate:
            inputs = self.mocks.last_inputs  # what super() just handed the OfflineMocks (same thread, same request)
            self.recorded.append(
                RecordedResource(
                    urn=response.urn,
                    type=request.type,
                    name=request.name,
                    parent=request.parent or None,
                    depends_on=tuple(sorted(set(request.dependencies))),
                    inputs=_plain(inputs),
                    custom=bool(request.custom),
                    protect=bool(request.protect),
                    ignore_changes=tuple(request.ignoreChanges),
                    # The SDK sends an entry for every input; only those fed by another resource say anything.
                    property_dependencies={
                        key: tuple(sorted(deps.urns))
                        for key, deps in sorted(request.propertyDependencies.items())
                        if deps.urns
                    },
                )
            )
        return response

    def RegisterResourceOutputs(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        self.outputs[request.urn] = tuple(sorted(request.outputs.fields.keys()))
        return super().RegisterResourceOutputs(request)


def _plain(value: Any) -> Any:
    """Inputs as JSON data. The wire carries every number as a double: integral ones print as ints."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _drop_aliases(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
    if not args.opts.aliases:
        return None
    opts = copy.copy(args.opts)
    opts.aliases = None
    return pulumi.ResourceTransformationResult(args.props, opts)


def _without_aliases(program: Callable[[], Any]) -> Any:
    """Run `program` with every resource's aliases dropped. An alias only maps a resource's earlier URNs to its
    existing state, and the offline engine has none, so no plan changes (the plan JSON has no aliases); but
    azure-native declares one per API version, dozens per resource, and the SDK resolves each into outputs,
    which made an Azure plan about seven times slower."""
    pulumi.runtime.register_stack_transformation(_drop_aliases)
    return program()


class _EnginePool(ThreadPoolExecutor):
    """The threads the SDK sends each registration to (run_in_executor on the run's loop), kept from run to run.
    A loop's own pool lives as long as the loop, and each of its threads makes an event loop of its own for the
    mocks: a fresh pool per run made six threads and loops per plan that no one collected (thousands in a test
    worker), and their start-up was a tenth of a plan. Closing a run's loop asks its pool to shut down: this one
    stays, and its idle threads end with the interpreter (concurrent.futures joins them at exit)."""

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Kept for the next run; see the class."""


@functools.cache
def _engine_pool(pid: int) -> _EnginePool:
    """This process's pool. A forked child gets its own: the parent's threads do not exist in it, yet the pool it
    inherits counts them as idle and would hand them work that never runs."""
    return _EnginePool(thread_name_prefix=f"gpufleet-engine-{pid}")


def _on_a_thread_of_its_own(function: Callable[..., T]) -> Callable[..., T]:
    """`function` run on a new thread, the caller waiting: the SDK walks the whole Python stack for every resource
    it registers (its source positions), and a caller's frames (a test runner's dozens) made that a fifth of a plan.
    What it returns or raises reaches the caller unchanged."""

    @functools.wraps(function)
    def on_its_thread(*args: Any, **kwargs: Any) -> T:
        outcome: list[Any] = []

        def run() -> None:
            try:
                outcome.append(function(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - raised again on the caller's thread, unchanged
                outcome.append(exc)

        worker = threading.Thread(target=run, name=function.__name__, daemon=True)
        worker.start()
        worker.join()
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        return outcome[0]

    return on_its_thread


@_on_a_thread_of_its_own
def run_program(
    program: Callable[[], Any],
    config: dict[str, Any],
    *,
    project: str,
    stack: str,
    region: str,
    zones: list[str],
) -> list[RecordedResource]:
    """Run `program` with `config` (full keys, e.g. `gpufleet:cluster`) and return what it registered."""
    offline = OfflineMocks(region=region, zones=zones)
    monitor = RecordingMonitor(offline)
    # Each run starts clean. A failed program leaves tasks and pending outputs behind (an invoke's outputs,
    # applies) that would wake up or be waited for in the next run: a loop of its own (set before
    # set_mocks, which makes the root stack resource on the current loop) and the SDK's tracked outputs emptied
    # in place (a deque in pulumi 3.231, a set later: the SDK appends or adds to whichever it made). The root
    # stack is reset too: set_mocks keeps one left by an earlier run of another stack.
    loop = asyncio.new_event_loop()
    loop.set_default_executor(_engine_pool(os.getpid()))
    asyncio.set_event_loop(loop)
    settings.ROOT.set(None)
    settings.SETTINGS.outputs.clear()
    mocks.set_mocks(offline, project=project, stack=stack, preview=False, monitor=monitor)
    pulumi.runtime.set_all_config(
        {key: value if isinstance(value, str) else json.dumps(value) for key, value in config.items()}
    )
    try:
        loop.run_until_complete(run_pulumi_func(lambda: _without_aliases(program)))
    finally:
        leftovers = asyncio.all_tasks(loop)
        for task in leftovers:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
        loop.close()
    if monitor.duplicates:
        raise DuplicateUrn(monitor.duplicates[0])
    return sorted(
        (replace(r, registered_outputs=monitor.outputs.get(r.urn, ())) for r in monitor.recorded),
        key=lambda r: r.urn,
    )
