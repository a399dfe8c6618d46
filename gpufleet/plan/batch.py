"""Plan many stacks (`plan --all`): in worker processes when there are enough stacks and CPUs, else in this one.

Outcomes come back in the order of the names given, whatever order the workers finish in, so the output of a
batch is the same on every machine. A stack never ends the batch: an invalid one is exit 2 and an internal
error exit 3 for that stack, the others are still planned. Workers are forked from a fork server (not from this
process: it may hold gRPC and asyncio state) that imported the planner, the engine and the pack once, before any
worker starts: a worker begins with them loaded instead of importing them again (where the platform has no fork
server, workers are spawned and import them themselves). Most of a worker's time on its first stacks is then
importing its provider's SDK modules, so a worker is handed stacks of the provider it planned last while any are
left, and imports one or two providers' modules where a round-robin would make every worker import them all.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
from collections import deque
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import Any

from .. import collector
from ..stackfile import SpecInvalid, stack_path
from ..yaml_model import read_yaml

EXIT_INTERNAL = 3
# A worker starts by importing its provider SDKs (one to two seconds): below this many stacks that costs more than
# planning them here.
PARALLEL_FROM = 4
# What every worker needs whatever it plans, imported once by the fork server (not the provider SDKs: each worker
# imports only its own providers').
PRELOADED = ["gpufleet.plan.batch", "gpufleet.plan.planner"]


@dataclass(frozen=True)
class StackOutcome:
    """One stack of a batch: its exit status and either its plan (`--format json` document) or its error."""

    name: str
    path: Path
    exit_code: int
    plan: dict[str, Any] | None
    error: str | None


def plan_one(stacks_dir: Path, name: str, digest_key: str | None = None) -> StackOutcome:
    """Plan stack NAME of stacks_dir; never raises for the stack's sake (exit 2 invalid, exit 3 internal). With
    `digest_key`, its plan shows each secret as its digest under that key (`gpufleet diff` compares them)."""
    # Imported here: a parent that only hands stacks to workers never loads the engine and the provider SDKs.
    from .planner import EXIT_INVALID, plan_stack

    path = stack_path(stacks_dir, name)
    try:
        result = plan_stack(path, stacks_dir)
        plan = result.to_json(digest_key=digest_key.encode() if digest_key is not None else None)
        outcome = StackOutcome(name, path, result.exit_code, plan, None)
    except SpecInvalid as invalid:
        outcome = StackOutcome(name, path, EXIT_INVALID, None, str(invalid))
    except Exception as exc:  # one stack's internal error is that stack's exit 3, not the batch's end
        outcome = StackOutcome(name, path, EXIT_INTERNAL, None, f"internal error: {type(exc).__name__}: {exc}")
    collector.collect_after_stack()
    return outcome


def plan_stacks(stacks_dir: Path, names: list[str], workers: int | None = None,
                digest_key: str | None = None) -> Iterator[StackOutcome]:
    """Plan `names` of stacks_dir with up to `workers` processes (default: the CPU count), yielding in order;
    secrets as digests under `digest_key` where one is given (plan_one)."""
    workers = min(workers or os.cpu_count() or 1, len(names))
    if workers < 2 or len(names) < PARALLEL_FROM:
        for name in names:
            yield plan_one(stacks_dir, name, digest_key)
        return
    _workers_context()  # the fork server starts its imports while the stacks are read
    queues = _by_provider(stacks_dir, names)
    pools = [_pool(1) for _ in range(workers)]
    running: dict[Future[StackOutcome], tuple[int, str]] = {}
    done: dict[str, StackOutcome] = {}
    last: list[tuple[str, ...] | None] = [None] * workers
    try:
        for worker in range(workers):
            _dispatch(pools, worker, last, queues, running, stacks_dir, digest_key)
        for name in names:
            while name not in done:
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    worker, planned = running.pop(future)
                    done[planned] = _result(future, stacks_dir, planned)
                    _dispatch(pools, worker, last, queues, running, stacks_dir, digest_key)
            yield done.pop(name)
    finally:
        for pool in pools:
            pool.shutdown(wait=True, cancel_futures=True)


def _by_provider(stacks_dir: Path, names: list[str]) -> dict[tuple[str, ...], deque[str]]:
    """The stacks to plan, grouped by the provider settings each one's file names."""
    queues: dict[tuple[str, ...], deque[str]] = {}
    for name in names:
        queues.setdefault(_providers(stack_path(stacks_dir, name)), deque()).append(name)
    return queues


def _providers(path: Path) -> tuple[str, ...]:
    """The provider namespaces of a stack file's own settings (aws, azure-native, alicloud): the Pulumi CLI reads
    provider settings from the stack's own file only, so every stack names its provider there. An unreadable file
    has none; planning it reports what is wrong."""
    try:
        config = read_yaml(path).get("config") or {}
        return tuple(sorted({str(key).partition(":")[0] for key in config if not str(key).startswith("gpufleet:")}))
    except Exception:  # an ordering hint only
        return ()


def _dispatch(pools: list[ProcessPoolExecutor], worker: int, last: list[tuple[str, ...] | None],
              queues: dict[tuple[str, ...], deque[str]], running: dict[Future[StackOutcome], tuple[int, str]],
              stacks_dir: Path, digest_key: str | None) -> None:
    """Give `worker` its next stack: one of the provider it planned last while any is left (its SDK modules are
    loaded), else one of the provider with the most stacks left that no other worker is on, else of the most."""
    left = {key: queue for key, queue in queues.items() if queue}
    if not left:
        return
    key = last[worker]
    if key not in left:
        others = {last[index] for index in range(len(pools)) if index != worker}
        key = max(left, key=lambda k: (k not in others, len(left[k])))
    last[worker] = key
    name = left[key].popleft()
    try:
        future = pools[worker].submit(plan_one, stacks_dir, name, digest_key)
    except BrokenProcessPool:  # the worker died planning its last stack (see _result): a fresh one takes over
        pools[worker] = _pool(1)
        future = pools[worker].submit(plan_one, stacks_dir, name, digest_key)
    running[future] = (worker, name)


def _pool(workers: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(max_workers=workers, mp_context=_workers_context(), initializer=_start_worker)


def _workers_context() -> BaseContext:
    """The fork server, started with PRELOADED imported (once per process: a running server is reused); spawn where
    the platform has none."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOADED)
    from multiprocessing import forkserver

    forkserver.ensure_running()
    return context


def _start_worker() -> None:
    gc.disable()  # a worker is a command like any other (gpufleet/collector.py); plan_one collects per stack
    collector.skip_collection_at_exit()


def _result(future: Future[StackOutcome], stacks_dir: Path, name: str, digest_key: str | None = None) -> StackOutcome:
    try:
        return future.result()
    except BrokenProcessPool:
        # A worker died (a crash in native code, the kernel's OOM killer) and took the pool with it: every stack
        # it left unplanned is planned again in a process of its own, so only the one that kills it fails.
        with _pool(1) as alone:
            try:
                return alone.submit(plan_one, stacks_dir, name, digest_key).result()
            except BrokenProcessPool:
                return StackOutcome(
                    name, stack_path(stacks_dir, name), EXIT_INTERNAL, None,
                    "internal error: the process planning this stack ended abruptly (crash or out of memory)",
                )
