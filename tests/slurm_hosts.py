"""Test nodes as hosts of their own: each in a network namespace with its own address on a bridge whose address is the
controller's, as a cloud's nodes and head node share one subnet. Each slurmd then listens on the cluster's one
SlurmdPort at its own address and registers from it (slurmctld takes a dynamic node's NodeAddr from the address its
registration came from: src/slurmctld/node_mgr.c lines 5045-5050 at SchedMD/slurm@slurm-25-11-5-1), so a job step
across two nodes (srun -N2) runs as on a cloud. Each host also has a UTS namespace with the node's name as its
hostname. The hosts have no route beyond the bridge: a name lookup fails at once (no resolver is reachable) instead of
waiting out DNS timeouts inside slurmd's replies.

A host's namespaces belong to a holder process (`unshare --net --uts sleep`), not to `ip netns`'s mounts under
/run/netns: every mount namespace made meanwhile (the rootfs shims, a node's) would copy such a mount and keep the
namespace, and its veth, alive for as long as any process in it runs. Root only; the hosts and links go when the
context ends."""

from __future__ import annotations

import ipaddress
import json
import os
import random
import secrets
import shutil
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field

from slurm_daemons import processes_where, wait_for

# Private blocks tried for the bridge's /24; one that overlaps a route of this machine is skipped.
CANDIDATE_NETWORKS = ipaddress.ip_network("10.64.0.0/10")


@dataclass(frozen=True)
class Host:
    """A node's namespaces (those of the holder process `pid`), its address there and its hostname."""

    pid: int
    address: str
    hostname: str

    def command(self, argv: list[str]) -> list[str]:
        """argv run on this host: in its network and UTS namespaces."""
        return ["nsenter", f"--net=/proc/{self.pid}/ns/net", f"--uts=/proc/{self.pid}/ns/uts", *argv]


@dataclass
class HostNetwork:
    """A bridge with the controller's address and the hosts plugged into it."""

    token: str
    network: ipaddress.IPv4Network
    hosts: list[Host] = field(default_factory=list)

    @property
    def bridge(self) -> str:
        return f"gfb{self.token}"

    @property
    def controller_address(self) -> str:
        return str(self.network[1])

    def add_host(self, hostname: str) -> Host:
        """A new host named `hostname`: its end of a veth pair as eth0 with the next address, the other end in the
        bridge."""
        index = len(self.hosts) + 1
        holder = subprocess.Popen(["unshare", "--net", "--uts", "sleep", "infinity"])
        host = Host(holder.pid, str(self.network[index + 1]), hostname)
        self.hosts.append(host)
        ours = os.readlink("/proc/self/ns/net")
        wait_for(f"host {hostname}'s namespace", lambda: os.readlink(f"/proc/{holder.pid}/ns/net") != ours, 10)
        subprocess.run(host.command(["hostname", hostname]), check=True, capture_output=True)
        veth = f"gfv{self.token}{index}"
        _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", str(host.pid))
        _ip("link", "set", veth, "master", self.bridge, "up")
        _ip_on(host, "addr", "add", f"{host.address}/{self.network.prefixlen}", "dev", "eth0")
        for link in ("lo", "eth0"):
            _ip_on(host, "link", "set", link, "up")
        return host


@contextmanager
def host_network() -> Iterator[HostNetwork]:
    """A bridge on a free /24 with the controller's address; every host's processes ended after (its namespace and
    veth go with the last of them) and the bridge removed."""
    if not shutil.which("ip"):
        raise RuntimeError("no `ip` command for the test nodes' network namespaces: install iproute2 (.ci/run does)")
    network = HostNetwork(secrets.token_hex(3), _free_network())
    _ip("link", "add", network.bridge, "type", "bridge")
    try:
        _ip("addr", "add", f"{network.controller_address}/{network.network.prefixlen}", "dev", network.bridge)
        _ip("link", "set", network.bridge, "up")
        yield network
    finally:
        for host in network.hosts:
            _end_processes_on(host)
        _ip("link", "delete", network.bridge)


def _end_processes_on(host: Host) -> None:
    """SIGKILL to the holder and to whatever still runs in its network namespace once the daemons are stopped (a
    step's slurmstepd a failed test left), then wait until none is left."""
    with suppress(FileNotFoundError):
        namespace = os.readlink(f"/proc/{host.pid}/ns/net")

        def left() -> list[int]:
            return processes_where(lambda process: os.readlink(process / "ns/net") == namespace)

        for pid in left():
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with suppress(ChildProcessError):
            os.waitpid(host.pid, 0)
        wait_for(f"host {host.hostname}'s processes to end", lambda: not left(), 10)


def _free_network() -> ipaddress.IPv4Network:
    """A /24 of CANDIDATE_NETWORKS no route of this machine overlaps (concurrent test workers pick at random)."""
    routes = json.loads(_ip("-j", "route", "show", "table", "all"))
    taken = [ipaddress.ip_network(route["dst"]) for route in routes if route.get("dst", "default")[0].isdigit()]
    blocks = list(CANDIDATE_NETWORKS.subnets(new_prefix=24))
    for block in random.sample(blocks, 64):
        if not any(block.overlaps(route) for route in taken if route.version == 4):
            return block
    raise RuntimeError(f"no free /24 in {CANDIDATE_NETWORKS} among 64 tried")


def _ip_on(host: Host, *args: str) -> str:
    return subprocess.run(host.command(["ip", *args]), check=True, capture_output=True, text=True).stdout


def _ip(*args: str) -> str:
    return subprocess.run(["ip", *args], check=True, capture_output=True, text=True).stdout
