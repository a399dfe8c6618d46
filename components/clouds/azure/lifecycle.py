"""What Azure does around a node's life: the terminate notification before a Regular VM goes (the node's
watcher runs the checkpoint hook on it) and the health gate (the Application Health extension reads the node
check result from the bootstrap's endpoint; automatic repairs replace a node that failed it)."""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.catalog import Catalog

from ..hooks import node_check_retry_seconds as retry_inside

# The bootstrap serves the node check result here (components/bootstrap/scripts/health-endpoint.py).
HEALTH_PORT = 9180
HEALTH_PATH = "/health"
# How long a new node may stay unhealthy (booting, running the node check) before it is repaired; the
# node check with its GPU burn-in fits well inside (Azure allows PT10M to PT90M).
REPAIR_GRACE_SECONDS = 1800
REPAIR_GRACE = f"PT{REPAIR_GRACE_SECONDS // 60}M"
# Application Health extension (Linux), v2: rich health states from the JSON body.
HEALTH_EXTENSION = {"publisher": "Microsoft.ManagedServices", "type": "ApplicationHealthLinux", "version": "2.0"}


def node_check_retry_seconds(mig: bool) -> int:
    """The boot check's retry window inside the repair grace period, which starts when the VM is created: until it
    ends, automatic repairs leave an Unhealthy node alone (the health endpoint says Unhealthy while the check
    retries), so a check that passes on a later try keeps the node (hooks.node_check_retry_seconds)."""
    return retry_inside(REPAIR_GRACE_SECONDS, 0, mig)


@dataclass(frozen=True)
class TerminateNotice:
    """How long Azure holds a Regular VM's deletion for the node to checkpoint, by the catalog's bounds."""

    seconds: int

    @property
    def not_before_timeout(self) -> str:
        """ISO 8601, whole minutes, as notBeforeTimeout takes it."""
        return f"PT{self.seconds // 60}M"


def terminate_notice(checkpoint_grace_seconds: int, catalog: Catalog) -> TerminateNotice:
    """The stack's checkpoint grace in whole minutes (rounded up), clamped to what Azure accepts (5 to 15 min)."""
    low = int(catalog.limit("azure", "terminate_notification_min_seconds"))
    high = int(catalog.limit("azure", "terminate_notification_max_seconds"))
    minutes = -(-checkpoint_grace_seconds // 60)
    return TerminateNotice(min(max(minutes * 60, low), high))


def health_settings() -> dict[str, object]:
    """The Application Health extension's public settings: probe the bootstrap's endpoint on the node."""
    return {"protocol": "http", "port": HEALTH_PORT, "requestPath": HEALTH_PATH, "intervalInSeconds": 5,
            "numberOfProbes": 1}
