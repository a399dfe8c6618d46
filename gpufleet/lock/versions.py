"""Dotted version strings compared as numbers (580.95.05 > 580.65.06 > 570.26)."""

from __future__ import annotations

import re


def version_key(version: str) -> tuple[int, ...]:
    """Numeric parts of a dotted version; raises ValueError on a part that is not a number."""
    return tuple(int(part) for part in version.split("."))


def cuda_minor(cuda: str) -> str:
    """12.8.1 -> 12.8: minimum drivers are published per CUDA minor release."""
    return ".".join(cuda.split(".")[:2])


def driver_branch(driver: str) -> str:
    """580.95.05 -> r580."""
    return f"r{driver.split('.')[0]}"


def release_key(version: str) -> tuple[int, ...]:
    """Every run of digits, in order: the order of release strings such as EKS add-on versions (v1.18.5-eksbuild.2 >
    v1.18.5 > v1.18.4-eksbuild.9), ACK versions (1.34.1-aliyun.1) and Azure image versions (22.04.202510230). A
    version with no digits raises ValueError."""
    numbers = tuple(int(run) for run in re.findall(r"[0-9]+", version))
    if not numbers:
        raise ValueError(f"{version!r} has no version numbers")
    return numbers


def release_order(version: str) -> tuple[tuple[int, ...], str]:
    """A sort key by release_key that never raises: a version without numbers sorts first, then by its text."""
    try:
        return release_key(version), version
    except ValueError:
        return (), version
