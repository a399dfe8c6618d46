"""The cluster as a Mermaid flowchart for the Markdown report (GitHub renders a `mermaid` code block): the network
and its subnets, each node group with its fabric (EFA / InfiniBand / eRDMA, placement group / scale set), the shared
storage and keys, and the endpoints (the API server, admin access from outside the network).

Every label is quoted and every character outside a plain set is written as Mermaid's numeric entity (`#34;`), so
no stack name, description or range can end a label, open a link or close the Markdown fence."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from ipaddress import ip_network
from typing import Any

from ..stackfile.address_ranges import NON_PUBLIC
from .review import review
from .review.model import Resource, ReviewLine, shown, values_at
from .words import resource_name

_PLAIN = re.compile(r"[A-Za-z0-9 .,:;/_+=%*@()-]")
_DISK = re.compile(r"(?:OS |system )?disk GB \d+")
SHAPES = {"box": ("[", "]"), "fabric": ("{{", "}}"), "storage": ("[(", ")]"), "key": ("[/", "/]"),
          "endpoint": ("([", "])"), "outside": (">", "]")}
FABRIC = {"efa": "EFA", "infiniband": "InfiniBand", "erdma": "eRDMA", "none": "no RDMA fabric"}
NETWORKS = {"aws:ec2/vpc:Vpc": "cidrBlock", "azure-native:network:VirtualNetwork": "addressSpace.addressPrefixes[]",
            "alicloud:vpc/network:Network": "cidrBlock"}
SUBNETS = {"aws:ec2/subnet:Subnet": ("cidrBlock", "availabilityZone"),
           "azure-native:network:Subnet": ("addressPrefix", "addressPrefixes[]"),
           "alicloud:vpc/switch:Switch": ("cidrBlock", "zoneId")}
STORAGE = ("aws:fsx/lustreFileSystem:LustreFileSystem", "azure-native:storagecache:AmlFilesystem")
KEYS = ("aws:kms/key:Key", "azure-native:keyvault:Key", "alicloud:kms/key:Key")
API_SERVERS = ("aws:eks/cluster:Cluster", "azure-native:containerservice:ManagedCluster",
               "alicloud:cs/managedKubernetes:ManagedKubernetes")
# What holds a group's fabric together: AWS's cluster placement group, Azure's scale set (one placement group).
FABRIC_HOLDERS = ("aws:ec2/placementGroup:PlacementGroup", "azure-native:compute:VirtualMachineScaleSet",
                  "azure-native:containerservice:AgentPool")


def label(text: Any) -> str:
    """`text` as a quoted Mermaid label: one line, every character outside a plain set as a numeric entity."""
    flat = " ".join(str(text).split())
    return '"' + "".join(c if _PLAIN.fullmatch(c) else f"#{ord(c)};" for c in flat) + '"'


def _belongs(resource: Resource, group: str) -> bool:
    """A resource is a group's when the group's name is a whole run of its name's dash-separated words (the names
    the components give: <cluster>-<group>-<what>)."""
    words, wanted = resource_name(resource["urn"]).split("-"), group.split("-")
    return any(words[i:i + len(wanted)] == wanted for i in range(len(words) - len(wanted) + 1))


def _public(source: str) -> bool:
    try:
        net = ip_network(source, strict=False)
    except ValueError:
        return source.lower() in ("internet", "*", "any")
    return not any(net.subnet_of(private) for private in NON_PUBLIC[net.version])  # type: ignore[arg-type]


def _from_outside(line: ReviewLine) -> bool:
    if not line.detail.startswith("allow "):
        return False
    sources = line.detail.split(" from ", 1)[1].split(" (", 1)[0].split(", ")
    return any(_public(source) for source in sources)


class _Chart:
    def __init__(self) -> None:
        self.lines = ["flowchart LR"]
        self.count = 0

    def node(self, text: Any, shape: str = "box", indent: int = 1) -> str:
        self.count += 1
        ident = f"n{self.count}"
        opening, closing = SHAPES[shape]
        self.lines.append(f"{'  ' * indent}{ident}{opening}{label(text)}{closing}")
        return ident

    def open(self, text: Any, indent: int = 1) -> str:
        self.count += 1
        ident = f"n{self.count}"
        self.lines.append(f"{'  ' * indent}subgraph {ident}[{label(text)}]")
        return ident

    def close(self, indent: int = 1) -> None:
        self.lines.append(f"{'  ' * indent}end")

    def edge(self, source: str, target: str, text: str | None = None, dotted: bool = False) -> None:
        arrow = "-.->" if dotted else "-->"
        self.lines.append(f"  {source} {arrow}{f'|{label(text)}|' if text else ''} {target}")


def cluster_diagram(plan: Mapping[str, Any]) -> str:
    """The Mermaid source (without its fence) of a planned cluster."""
    resources: Sequence[Resource] = plan["resources"]
    lines = review(resources)
    chart = _Chart()
    networks = [r for r in resources if r["type"] in NETWORKS]
    network = chart.open("network " + ", ".join(
        f"{resource_name(r['urn'])} {shown(values_at(r.get('inputs') or {}, NETWORKS[r['type']]))}"
        for r in networks) if networks else "network (brought: not in this plan)")
    for subnet in (r for r in resources if r["type"] in SUBNETS):
        inputs = subnet.get("inputs") or {}
        chart.node(f"subnet {resource_name(subnet['urn'])} " + shown(
            [v for path in SUBNETS[subnet["type"]] for v in values_at(inputs, path)]), indent=2)
    groups: dict[str, str] = {}
    members: dict[str, set[str]] = {}
    for group in plan["summary"].get("node_groups", []):
        size = group["size"]
        groups[group["name"]] = chart.open(f"node group {group['name']}", indent=2)
        own = [r for r in resources if _belongs(r, group["name"])]
        disks = [m.group(0) for line in lines if line.concern == "sizes" and any(line.urn == r["urn"] for r in own)
                 for m in _DISK.finditer(line.detail)]
        chart.node(f"{group['instance_type']}, {group['capacity']}, "
                   f"min {size['min']} / desired {size['desired']} / max {size['max']}"
                   + "".join(f", {disk}" for disk in dict.fromkeys(disks)), indent=3)
        chart.node(_fabric(group, [r for r in own if r["type"] in FABRIC_HOLDERS]), "fabric", indent=3)
        members[group["name"]] = {r["urn"] for r in own}
        chart.close(indent=2)
    chart.close()
    stores = {}
    for store in (line for line in lines if line.concern == "sizes" and _type(resources, line.urn) in STORAGE):
        stores[store.urn] = chart.node(f"shared file system {line_text(store)}", "storage")
        for group in groups.values():
            chart.edge(group, stores[store.urn], "Lustre")
    users = _dependents(resources)
    for key in (r for r in resources if r["type"] in KEYS):
        ident = chart.node(f"key {resource_name(key['urn'])}", "key")
        for name, group in groups.items():
            if users[key["urn"]] & members[name]:
                chart.edge(ident, group, "encrypts disks", dotted=True)
        for urn, store in stores.items():
            if urn in users[key["urn"]]:
                chart.edge(ident, store, "encrypts", dotted=True)
    for server in (r for r in resources if r["type"] in API_SERVERS):
        said = [line.detail for line in lines if line.urn == server["urn"] and line.concern == "exposure"]
        ident = chart.node(f"API server {resource_name(server['urn'])}: {'; '.join(said) or 'endpoint as created'}",
                           "endpoint")
        chart.edge(ident, network, "nodes join")
    for opening in (line for line in lines if line.concern == "ingress" and _from_outside(line)):
        chart.edge(chart.node(f"from outside: {opening.detail}", "outside"), network, opening.subject)
    return "\n".join(chart.lines)


def _dependents(resources: Sequence[Resource]) -> dict[str, set[str]]:
    """Per URN, every recorded resource whose inputs depend on it, directly or through others (a disk encryption
    set between a key and a scale set); never through a shared file system (its key encrypts the file system, not
    the disks of the nodes that mount it)."""
    stores = {r["urn"] for r in resources if r["type"] in STORAGE}
    direct: dict[str, set[str]] = {r["urn"]: set() for r in resources}
    for r in resources:
        for urns in (r.get("property_dependencies") or {}).values():
            for urn in urns:
                direct.setdefault(urn, set()).add(r["urn"])
    closed: dict[str, set[str]] = {}
    for urn in direct:
        seen, todo = set(), [urn]
        while todo:
            for user in direct.get(todo.pop(), ()):
                if user not in seen:
                    seen.add(user)
                    todo += [] if user in stores else [user]
        closed[urn] = seen
    return closed


def line_text(line: ReviewLine) -> str:
    return f"{line.subject}: {line.detail}"


def _type(resources: Sequence[Resource], urn: str) -> str:
    return next((r["type"] for r in resources if r["urn"] == urn), "")


def _fabric(group: Mapping[str, Any], holders: Sequence[Resource]) -> str:
    fabric = FABRIC.get(group["fabric"], group["fabric"])
    text = f"fabric {fabric} x{group['interfaces']}" if group["interfaces"] else f"fabric: {fabric}"
    for holder in holders:
        inputs = holder.get("inputs") or {}
        if holder["type"] == FABRIC_HOLDERS[0]:
            text += f", placement group {resource_name(holder['urn'])} ({inputs.get('strategy')})"
        elif holder["type"] == FABRIC_HOLDERS[1]:
            single = "one placement group" if inputs.get("singlePlacementGroup") else "placement groups as Azure picks"
            text += f", scale set {resource_name(holder['urn'])} ({single})"
        else:
            text += f", AKS pool {resource_name(holder['urn'])} (a scale set)"
    return text
