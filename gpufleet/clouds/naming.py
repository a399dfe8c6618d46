"""Names that fit their cloud's rules: the shape of each cloud's names table (clouds/C/names.py: every name gpufleet
creates, its length, characters and uniqueness scope, with a source), and the one helper that derives a name to fit.

A name unique only inside the stack's own region or resource group keeps its readable form (cut to fit, with a hash
of the whole when cut). A name unique wider than one stack (a whole account or subscription over every region, a
tenant, every account of a region, the whole cloud) also carries a short hash of the base and what sets the stack
apart there (region, and the account or subscription where the program knows it), so two stacks that differ only
in region never ask for the same name. The hash is deterministic: a stack keeps its names from run to run."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from .mock_ids import digest

# 8 hex digits (32 bits): the chance two of 1,000 stacks share a hash is about 1 in 10,000.
HASH_CHARS = 8

Scope = Literal[
    "parent",  # unique inside the resource that holds it (a rule of a security group, a hook of a scaling group)
    "resource group",  # Azure: inside the stack's resource group
    "vpc",  # inside the stack's network
    "region",  # one account's (subscription's) region: the stack's own
    "account",  # one account over every region (AWS IAM, Alibaba RAM and CloudMonitor)
    "subscription",  # one Azure subscription over every region
    "tenant",  # one Azure (Entra ID) tenant
    "region, every account",  # one region over every customer's account (Alibaba SLS projects)
    "global",  # every customer everywhere (Azure Key Vault: a DNS name)
    "none",  # not unique (a display name)
]
# Scopes wider than a stack (a cluster in one region): these names carry the stack's hash.
WIDER_THAN_STACK: frozenset[str] = frozenset({"account", "subscription", "tenant", "region, every account", "global"})


@dataclass(frozen=True)
class NameRule:
    """One name a resource type takes as an input, as its cloud documents it."""

    type: str
    """Resource type token, as the plan records it."""
    path: str
    """The input property, as the plan's inputs write it (`a.b`, `list[].name`)."""
    max_len: int | None
    """Most characters; None where no documented limit was found (the source says so)."""
    chars: str
    """Regular expression the whole name matches (the documented characters and first/last rules)."""
    scope: Scope
    source: str
    min_len: int = 1

    def problems(self, value: str) -> list[str]:
        """What is wrong with `value` as this name; empty when it fits."""
        found = []
        if len(value) < self.min_len or (self.max_len is not None and len(value) > self.max_len):
            found.append(f"{len(value)} characters, allowed {self.min_len}-{self.max_len}")
        if not re.fullmatch(self.chars, value):
            found.append(f"does not match {self.chars}")
        return found


class NameTable:
    """A cloud's names: the rows of what it creates, and the name-valued inputs that create nothing (a reference to
    a name made elsewhere, or a value from a fixed list such as a SKU or metric), each with why."""

    def __init__(self, rules: Iterable[NameRule], not_created: dict[tuple[str, str], str]) -> None:
        self.rules = {(rule.type, rule.path): rule for rule in rules}
        self.not_created = not_created

    def rule(self, typ: str, path: str) -> NameRule | None:
        return self.rules.get((typ, path))

    def limit(self, typ: str, path: str) -> int | None:
        """The documented most characters of a name this table lists (KeyError for one it does not)."""
        return self.rules[(typ, path)].max_len


def stack_base(cluster: str, environment: str) -> str:
    """`<cluster>-<environment>`: the base of every name unique in a region or wider. A stack is one cluster in one
    environment, so the dev and prod stacks of a cluster in one account never ask for the same name (the scaling
    group names of clouds/backend.py carry the environment the same way)."""
    return f"{cluster}-{environment}"


def fit(base: str, limit: int | None, *scope: str, sep: str = "-") -> str:
    """`base` as it is when it fits and no scope is given. With scope (the name is unique wider than one stack; pass
    what sets the stack apart there: its region, and its account or subscription where known), `base<sep><hash>`
    with the hash of base and scope, base cut so the whole fits. A base too long without scope is cut the same way,
    with the hash of base alone, so two long names sharing their first characters stay apart. The cut base loses
    trailing separators and runs of `sep` (Key Vault refuses `--`)."""
    if not scope and (limit is None or len(base) <= limit):
        return base
    hashed = digest("\x00".join((base, *scope)), HASH_CHARS)
    head = base if limit is None else base[: max(0, limit - HASH_CHARS - len(sep))]
    head = re.sub(f"{re.escape(sep)}+", sep, head).rstrip("-_. " + sep)
    return f"{head}{sep}{hashed}" if head else hashed
