"""Run a cloud's read-only calls side by side, a bounded number at a time.

Each SDK retries throttling and bounds each call's time itself (botocore's retry modes, azure-core's
RetryPolicy and timeouts, the Alibaba Tea runtime's autoretry and timeouts); a cloud's module configures that
on the clients it makes. This module only spreads the checks over threads: the calls wait on the network.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from .findings import Finding

MAX_CALLS_AT_ONCE = 8

Check = Callable[[], list[Finding]]


def gather(checks: Sequence[Check], limit: int = MAX_CALLS_AT_ONCE) -> list[Finding]:
    """Every check's findings, in the order the checks were given; the first exception a check raises
    (PreflightUnavailable included) propagates once all started checks are done."""
    if not checks:
        return []
    with ThreadPoolExecutor(max_workers=min(limit, len(checks))) as pool:
        futures = [pool.submit(check) for check in checks]
        return [finding for future in futures for finding in future.result()]
