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
