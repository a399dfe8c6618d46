"""`gpufleet diff`: plan stacks at a base git ref and in the work tree, and compare them stack by stack.

The work tree is the project whose code is running (its `stacks/`, planned by this code as `gpufleet plan`
does); the base is the same project exported at the ref and planned by the ref's own code
(git_base.py). Base plans run in worker threads, each a subprocess, while the work tree's are planned as `plan
--all` plans them (batch.py: worker processes, outcomes in the order asked).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from secrets import token_hex
from typing import Any

from ..stackfile import SpecError, SpecInvalid, stack_names
from .batch import StackOutcome, plan_stacks
from .compare import Side, StackDiff, diff_stack
from .git_base import EXIT_INVALID, base_stacks, exported_tree, plan_in_tree, resolve_ref

EXIT_INTERNAL = 3
Tracker = Callable[[int], AbstractContextManager[Callable[[], None]]]
"""Given the number of stacks, a context yielding the function called as each stack is compared."""


@contextmanager
def untracked(total: int) -> Iterator[Callable[[], None]]:
    yield lambda: None


@dataclass
class DiffReport:
    base_ref: str
    base_commit: str
    stacks: list[StackDiff]

    @property
    def exit_code(self) -> int:
        """The work tree's verdict, as `gpufleet plan --all` gives it: 1 when a stack there fails a mandatory
        policy, 2 when one is invalid; a stack removed in the work tree counts as clean."""
        return max((_work_tree_exit(s.after) for s in self.stacks), default=0)

    def to_json(self) -> dict[str, Any]:
        return {"base": {"ref": self.base_ref, "commit": self.base_commit}, "exit_code": self.exit_code,
                "stacks": [s.to_json() for s in self.stacks]}


def _work_tree_exit(side: Side) -> int:
    if side.state == "absent":
        return 0
    if side.state == "invalid":
        return EXIT_INVALID
    return side.exit_code if side.exit_code is not None else EXIT_INTERNAL


def work_tree_side(outcome: StackOutcome) -> Side:
    """A work tree stack's plan as one side of its diff: planned, invalid (exit 2) or error (exit 3, this stack's)."""
    if outcome.plan is not None:
        return Side("planned", outcome.exit_code, plan=outcome.plan)
    return Side("invalid" if outcome.exit_code == EXIT_INVALID else "error", outcome.exit_code, error=outcome.error)


def diff_against(root: Path, base: str, stacks: list[str] | None = None, track: Tracker = untracked,
                 work_stacks: Path | None = None, jobs: int | None = None) -> DiffReport:
    """Diff STACKS (default: every stack on either side) of the project at `root`, its stack files in
    `work_stacks` (default root/stacks), against git ref `base`, whose stack files are at the same place. The
    work tree's stacks are planned in up to `jobs` worker processes (default: half the CPUs, the base's
    subprocesses take the rest; 1: in this process).

    SpecInvalid (exit 2) when `root` is not in a git work tree, `base` names no commit, a named stack
    exists on neither side, or the stack folder is outside the project."""
    work_stacks = work_stacks or root / "stacks"
    try:
        in_project = work_stacks.resolve().relative_to(root.resolve())
    except ValueError:
        raise SpecInvalid([SpecError("--stacks-dir", f"{work_stacks} is outside the project at {root}: diff "
                                     "compares the project's own stack files at two commits")]) from None
    commit = resolve_ref(root, base)
    # One key per run: both sides print each secret as its digest under it, so a changed secret shows as changed
    # while neither plan (the base's crosses a process boundary) carries a secret in clear.
    digest_key = token_hex(32)
    with exported_tree(root, commit) as tree:
        at_base = set(base_stacks(tree, in_project))
        at_work = set(stack_names(work_stacks)) if work_stacks.is_dir() else set()
        names = sorted(at_base | at_work) if stacks is None else stacks
        missing = [name for name in names if name not in at_base | at_work]
        if missing:
            raise SpecInvalid([SpecError("--stack", f"no stack {name!r} at {base} or in the work tree; known: "
                                         f"{', '.join(sorted(at_base | at_work))}") for name in missing])
        # The CPUs are shared: base plans run as subprocesses from threads, work tree plans in plan --all's workers.
        cpus = os.cpu_count() or 2
        work_workers = jobs or max(1, cpus // 2)
        work_names = [name for name in names if name in at_work]
        with (ThreadPoolExecutor(max_workers=max(1, cpus - work_workers)) as pool, track(len(names)) as advance,
              closing(plan_stacks(work_stacks, work_names, work_workers, digest_key)) as planned):
            before: dict[str, Future[Side]] = {
                name: pool.submit(plan_in_tree, tree, name, digest_key, in_project) for name in names if name in at_base
            }
            diffs = []
            for name in names:
                after = work_tree_side(next(planned)) if name in at_work else Side("absent")
                diffs.append(diff_stack(name, before[name].result() if name in before else Side("absent"), after))
                advance()
    return DiffReport(base, commit, diffs)
