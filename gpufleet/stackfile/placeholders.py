"""Values a shipped stack carries for the user to replace: a `REPLACE...` text, an address at a documentation
domain (RFC 2606: example.com, .net, .org), a documentation address range (RFC 5737: TEST-NET-1/2/3). A fork
inherits them silently; a real run must not deploy them (gpufleet/program.py refuses them, the plan names them)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from ipaddress import IPv4Network, ip_network
from typing import Any

from .errors import SpecError, field_path

PLACEHOLDER_TEXT = re.compile(r"^replace\b", re.IGNORECASE)
DOCUMENTATION_EMAIL = re.compile(r"@(?:[\w-]+\.)*example\.(?:com|net|org)$", re.IGNORECASE)
DOCUMENTATION_RANGES = tuple(IPv4Network(r) for r in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"))


def placeholders(value: Any, loc: tuple[str | int, ...] = ()) -> Iterator[SpecError]:
    """Each placeholder among the values of `value` (a stack section as plain data), at its field path."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from placeholders(item, (*loc, str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from placeholders(item, (*loc, index))
    elif isinstance(value, str) and (problem := _problem(value)):
        yield SpecError(field_path("", loc), f"{value!r} is {problem}: replace it with yours")


def _problem(text: str) -> str | None:
    if PLACEHOLDER_TEXT.match(text):
        return "a placeholder the template left"
    if DOCUMENTATION_EMAIL.search(text):
        return "an address at a documentation domain (nobody reads it)"
    try:
        network = ip_network(text, strict=False)
    except ValueError:
        return None
    if isinstance(network, IPv4Network) and any(network.subnet_of(r) for r in DOCUMENTATION_RANGES):
        return "a documentation address range (RFC 5737: no deployer sits there)"
    return None
