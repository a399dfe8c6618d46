"""Dotted version strings compared as numbers (580.95.05 > 580.65.06 > 570.26)."""

from __future__ import annotations


def version_key(version: str) -> tuple[int, ...]:
    """Numeric parts of a dotted version; raises ValueError on a part that is not a number."""
    return tuple(int(part) for part in version.split("."))


def cuda_minor(cuda: str) -> str:
    """12.8.1 -> 12.8: minimum drivers are published per CUDA minor release."""
    return ".".join(cuda.split(".")[:2])


def driver_branch(driver: str) -> str:
    """580.95.05 -> r580."""
    return f"r{driver.split('.')[0]}"
