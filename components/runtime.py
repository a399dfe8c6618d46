"""What the components ask of the Pulumi runtime they run under."""

from __future__ import annotations


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
