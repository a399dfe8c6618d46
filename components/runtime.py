"""What the components ask of the Pulumi runtime they run under, and how a real run refuses what it must not deploy."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


def running_offline() -> bool:
    """True under a Pulumi mock monitor (gpufleet's offline engine, unit tests), False under the Pulumi CLI.

    The CLI's engine connects a gRPC monitor; the mocks install the SDK's MockMonitor. A config key would
    not do: a stack file could set it and skip a refusal on a real deploy. `is_dry_run` would not either:
    `pulumi preview` is a dry run against the real engine.
    """
    import pulumi
    from pulumi.runtime.mocks import MockMonitor

    return isinstance(pulumi.runtime.settings.get_monitor(), MockMonitor)


def refuse_unread(message: str) -> None:
    """Stop a real `pulumi up` on a fact nobody has read from its source (an unread digest, add-on version, download);
    a `pulumi preview` goes on with the same words as a warning, so a pull request shows its diff before the facts
    land; the offline plan shows the finding instead (gpufleet/plan/stack_facts.py)."""
    import pulumi

    if running_offline():
        return
    if pulumi.runtime.is_dry_run():
        pulumi.log.warn(f"{message} (a preview goes on; `pulumi up` stops here)")
        return
    raise pulumi.RunError(message)


@dataclass(frozen=True)
class Refusal:
    """What a real preview or deploy stops on, at the stack field that causes it; the message says the fix."""

    field: str
    message: str


# The refusals of the plan the offline engine is building: one plan at a time per process (plan --all plans in
# turn or in worker processes), and the program registers from the engine's thread, so a module list serves.
_recorded: list[Refusal] | None = None


def refuse(field: str, message: str) -> None:
    """Stop a real preview or deploy before it creates something that cannot work (an unbaked image, a placeholder
    value, a missing key); offline, the plan records it instead (summary.refusals) and goes on, so it shows the
    stack whole and names every refusal at once, on every cloud alike."""
    import pulumi

    if running_offline():
        if _recorded is not None:
            _recorded.append(Refusal(field, message))
        return
    raise pulumi.RunError(f"{field}: {message}" if field else message)


@contextmanager
def recorded_refusals() -> Iterator[list[Refusal]]:
    """The refusals of the program run inside the block (the offline planner's)."""
    global _recorded
    previous, _recorded = _recorded, []
    try:
        yield _recorded
    finally:
        _recorded = previous


# The warnings of the plan the offline engine is building (as _recorded above).
_warned: list[str] | None = None


def warn_unconfirmed(field: str, message: str) -> None:
    """Say what a real run may meet that nobody has confirmed on an account (a documented cloud refusal that the
    provider's only create path walks into): a real preview or deploy logs it as a warning and goes on; offline, the
    plan lists it under summary.warnings, so neither says nothing."""
    import pulumi

    if running_offline():
        if _warned is not None:
            _warned.append(f"{field}: {message}")
        return
    pulumi.log.warn(f"{field}: {message}")


@contextmanager
def recorded_warnings() -> Iterator[list[str]]:
    """The warnings of the program run inside the block (the offline planner's)."""
    global _warned
    previous, _warned = _warned, []
    try:
        yield _warned
    finally:
        _warned = previous
