"""The `gpufleet fork` command line that turns one quote row into a stack: which shipped template fits the
row, and the `--set` overrides that make it hold the quoted nodes in the quoted region. Printed, never run."""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .catalog import load_catalog
from .catalog.quote import Capacity, QuoteRow
from .clouds.lookup import backend
from .lock import load_lock
from .stackfile import CLUSTER_KEY, SpecError, SpecInvalid, load_stack, stack_names, stack_path
from .stackfile.models import NAME_PATTERN

# The shell variable the zone lookup sets and the settings read: the zone's name in the user's own account.
ZONE_VARIABLE = "zone"
ZONE = f"${ZONE_VARIABLE}"


@dataclass(frozen=True)
class ForkLine:
    template: str
    settings: tuple[str, ...]
    """`path=value` overrides, in the order `gpufleet fork --set` takes them; ZONE stands for the looked-up name."""
    notes: tuple[str, ...]
    zone_lookup: str | None = None
    """The command printing the priced zone's name in the account signed in, run first into ZONE_VARIABLE."""

    def command(self, new: str, multiline: bool = False) -> str:
        """The shell command line; with multiline, one `--set` a line (backslash continued). With a zone lookup the
        fork runs only once the lookup has answered (`&&`)."""
        head = shlex.join(["gpufleet", "fork", self.template, new])
        sets = [f"--set {_shell_word(setting)}" for setting in self.settings]
        fork = (" \\\n    " if multiline else " ").join([head, *sets])
        if self.zone_lookup is None:
            return fork
        return f"{ZONE_VARIABLE}=$({self.zone_lookup}) &&" + (" \\\n" if multiline else " ") + fork


def _shell_word(setting: str) -> str:
    """One shell word: quoted literally, or in double quotes where it reads ZONE (settings that do are written
    here, with nothing else a shell expands)."""
    return f'"{setting}"' if ZONE in setting else shlex.quote(setting)


def _clusters(stacks_dir: Path) -> dict[str, dict[str, Any]]:
    """Every cluster stack in stacks_dir with `extends` resolved (image stacks left out)."""
    found = {}
    for name in stack_names(stacks_dir):
        cluster = load_stack(stack_path(stacks_dir, name), stacks_dir).get(CLUSTER_KEY)
        if isinstance(cluster, dict):
            found[name] = cluster
    return found


def _trains(cluster: dict[str, Any]) -> bool:
    """A training template: its first node group requires RDMA."""
    groups = cluster.get("node_groups") or [{}]
    return groups[0].get("rdma") == "required"


def choose_template(row: QuoteRow, clusters: dict[str, dict[str, Any]]) -> str:
    """The shipped stack of the row's cloud whose profile fits: a training template (RDMA required) for a type
    with an RDMA fabric, a serving one otherwise; one already on the row's type first."""
    inst = load_catalog().get(row.cloud, row.instance_type)
    wants_training = inst is not None and inst.rdma
    same_cloud = {name: c for name, c in clusters.items() if c.get("cloud") == row.cloud}
    if not same_cloud:
        raise SpecInvalid([SpecError("--fork", f"no shipped {row.cloud} cluster stack to fork from")], source="quote")
    fitting = {n: c for n, c in same_cloud.items() if _trains(c) == wants_training} or same_cloud

    def on_type(name: str) -> bool:
        groups = fitting[name].get("node_groups") or [{}]
        return row.instance_type in (groups[0].get("instance_types") or [])[:1]

    def on_kubernetes(name: str) -> bool:
        # A quote is for nodes; a Kubernetes template adds a control plane (two zones, a pinned group zone) that
        # the overrides below do not move to another region.
        return (fitting[name].get("scheduler") or {}).get("kind", "none") != "none"

    return sorted(fitting, key=lambda name: (on_kubernetes(name), not on_type(name), name))[0]


def _zones(
    row: QuoteRow, template: dict[str, Any], clusters: dict[str, dict[str, Any]], rdma: bool
) -> list[str] | None:
    """Zones for the row's region: None to keep the template's (same region, or zone names that do not name
    the region, as Azure's "1"); zones a shipped stack uses there, else the cloud's default zone; [] where
    none is known. An RDMA group takes one zone."""
    zones = list((template.get("network") or {}).get("zones") or [])
    if not zones or template.get("region") == row.region or backend(row.cloud).zone_pattern(row.region) is None:
        return None
    used = next((list(c["network"]["zones"]) for c in clusters.values()
                 if c.get("region") == row.region and (c.get("network") or {}).get("zones")), None)
    if used is None:
        default = backend(row.cloud).default_zone(row.region)
        used = [default] if default is not None else None
    if used is None:
        return []
    return used[:1] if rdma else used


def _yaml(value: Any) -> str:
    """A --set value written as YAML flow text (fork reads values as YAML 1.2)."""
    if isinstance(value, list):
        return "[" + ", ".join(_yaml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_yaml(v)}" for k, v in value.items()) + "}"
    if value is None:
        return "null"
    return str(value)


def fork_line(row: QuoteRow, new: str, capacity: Capacity, stacks_dir: Path) -> ForkLine:
    """The fork of a shipped template that runs the row: its type, node count, region, capacity and budget."""
    clusters = _clusters(stacks_dir)
    template_name = choose_template(row, clusters)
    template = clusters[template_name]
    group = (template.get("node_groups") or [{}])[0]
    notes: list[str] = []
    settings: list[str] = []
    if re.fullmatch(NAME_PATTERN, new):
        settings.append(f"name={new}")
    else:
        notes.append(f"{new!r} is no cluster name (lower-case letters, digits, dashes): add --set name=...")
    if template.get("region") != row.region:
        settings.append(f"region={row.region}")
    lookup = backend(row.cloud).zone_name_lookup(row.region, row.zone_id) if row.zone_id is not None else None
    if lookup is not None:
        # The price is of one zone, named by its ID: the fork holds the group there, under the name the zone has in
        # the account the cloud's CLI is signed in to.
        settings.append(f"network.zones=[{ZONE}]")
        if group.get("zone") is not None:
            settings.append(f"node_groups[0].zone={ZONE}")
        notes.append(f"the spot price is of zone {row.zone_id}; zone names differ per account, so the command first "
                     f"reads its name in the account your {row.cloud} CLI is signed in to: sign in to the account "
                     "you deploy to (an account that lacks the zone answers None, which fork refuses)")
    elif template.get("region") != row.region:
        zones = _zones(row, template, clusters, rdma=group.get("rdma") == "required")
        if zones == []:
            notes.append(f"no zone of {row.region} is known here: add --set network.zones=[...] with yours")
        elif zones is not None:
            settings.append(f"network.zones={_yaml(zones)}")
    profile = template.get("image")
    if isinstance(profile, str) and not load_lock().image_entries(profile, row.cloud, row.region):
        # The fork is refused until an image of its profile exists there: say so rather than print a failing step.
        notes.append(f"image profile {profile!r} has no {row.cloud} image in {row.region}, so this fork is refused "
                     f"until one is baked there: add {row.region} to the image stack's regions, `pulumi up` it, then "
                     "`gpufleet images pin`")
    settings.append(f"node_groups[0].instance_types={_yaml([row.instance_type])}")
    low = min(int((group.get("size") or {}).get("min", 0)), row.nodes)
    settings.append(f"node_groups[0].size={_yaml({'min': low, 'desired': row.nodes, 'max': row.nodes})}")
    settings.append(f"node_groups[0].capacity={capacity}")
    if capacity == "spot" or group.get("on_demand_base"):
        settings.append("node_groups[0].on_demand_base=0")  # the quote prices every node at the asked capacity
    if row.on_demand_usd is not None:
        # The budget is checked at max size on demand: the quoted on-demand cost, rounded up to a dollar.
        settings.append(f"budget.max_hourly_usd={math.ceil(row.on_demand_usd)}")
    else:
        budget = template.get("budget") or {}
        if budget.get("max_hourly_usd") is not None:
            settings.append("budget.max_hourly_usd=null")
        if budget.get("alert_at_percent"):  # budget alerts need an amount
            settings.append("budget.alert_at_percent=[]")
        notes.append(f"{row.instance_type} has no catalog price in {row.region}: give your rate under prices: "
                     "and a budget before deploying")
    return ForkLine(template=template_name, settings=tuple(settings), notes=tuple(notes), zone_lookup=lookup)
