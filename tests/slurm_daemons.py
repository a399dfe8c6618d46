"""Real Slurm and munge daemons (Ubuntu resolute's slurm-wlm 25.11, tests/slurm_rootfs.py) on 127.0.0.1 (or nodes on
hosts of their own: tests/slurm_hosts.py), started with gpufleet's rendered slurm.conf, gres.conf and topology.conf:
munged, slurmctld and dynamic slurmd nodes, as the current user, in a temporary directory with free ports. GPUs are
stand-in character devices (the null device's numbers) named in gres.conf."""

from __future__ import annotations

import os
import pwd
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from local_registry import free_port
from slurm_rootfs import ROOTFS, missing, slurm_on_path

from components.slurm.gres_conf import render_gres_conf
from components.slurm.head_files import head_node_files
from components.slurm.health_check import render_health_check
from components.slurm.registration import slurmd_registration
from components.slurm.site import SlurmSite
from gpufleet.clouds.backend import ResolvedCluster, ResolvedGroup

if TYPE_CHECKING:
    from slurm_hosts import Host

# The test controller's own timers, shorter than Slurm's defaults so tests wait on state, not clocks; what the
# cluster's settings do is unchanged. SchedMD/slurm src/slurmctld: the power save thread looks at the nodes every
# power_save_interval seconds (10 by default: power_save.c:106 at slurm-22-05-8-1, :101 at slurm-25-11-5-1), and a
# submitted batch job waits up to batch_sched_delay for the scheduler (3 by default: controller.c:174 and :2222 at
# 22-05-8-1, :195 and :2888 at 25-11-5-1).
TEST_CONTROLLER_PARAMETERS = ",power_save_interval=1"
TEST_SCHEDULER_PARAMETERS = "SchedulerParameters=batch_sched_delay=0,bf_interval=1\n"
# Job states a job leaves no more (squeue.1 "JOB STATE CODES"; requeued jobs go back to PENDING).
JOB_ENDS = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL",
                      "DEADLINE", "PREEMPTED"})


def missing_daemons() -> list[str]:
    """Why the daemons cannot run here (tests/slurm_rootfs.py), or nothing."""
    why = missing()
    return [why] if why else []


def wait_for(what: str, ready: Callable[[], bool], seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not ready():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not ready after {seconds} s")
        time.sleep(0.2)


def daemon_pid(pid_file: Path) -> int:
    """The pid a daemon wrote once it has forked (the file may exist empty for a moment)."""
    wait_for(str(pid_file), lambda: pid_file.exists() and pid_file.read_text().strip().isdigit())
    return int(pid_file.read_text())


@dataclass
class SlurmCluster:
    """A running controller and its nodes; `run` calls a Slurm client against it."""

    root: Path
    site: SlurmSite
    cluster: ResolvedCluster
    processes: list[int] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": f"{self.site.etc_dir}/slurm.conf"}

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, capture_output=True, text=True, env=self.env, timeout=timeout, check=False)

    def node(self, name: str) -> str:
        return self.run("scontrol", "show", "node", name).stdout

    def job_end(self, job_id: str, seconds: float = 60.0) -> tuple[str, str]:
        """The job's final JobState and ExitCode, looked at every 0.2 s. `sbatch --wait` proves the same more slowly:
        it sleeps 2 s, then 8 (src/sbatch/sbatch.c _job_wait at slurm-25-11-5-1), so a 3 s job takes 10."""
        ended: dict[str, str] = {}

        def done() -> bool:
            fields = dict(part.split("=", 1) for part in self.run("scontrol", "-o", "show", "job", job_id)
                          .stdout.split() if "=" in part)
            ended.update(fields)
            return fields.get("JobState") in JOB_ENDS

        wait_for(f"job {job_id}", done, seconds)
        return ended["JobState"], ended["ExitCode"]

    def start_node(self, group: ResolvedGroup, instance_id: str, configless: bool = False,
                   host: Host | None = None) -> str:
        """A dynamic slurmd of the group, registered with the rendered registration line; its node name. Configless:
        the node has no slurm.conf of its own and fetches the head's from slurmctld (`--conf-server`), as a
        cloud's node does (components/slurm/node_files.py). On `host` (tests/slurm_hosts.py, the cluster started
        with its network's controller address): slurmd runs there, at its own address and the cluster's SlurmdPort."""
        instance = group.known_types[0]
        argv = slurmd_registration(group, instance, group.zones[0], instance_id)
        name = argv[argv.index("-N") + 1]
        env = self.env
        if configless:
            argv += ["--conf-server", f"{self.site.controller_address}:{self.site.slurmctld_port}"]
            argv, env = self.as_configless_node(argv, instance_id)
        if host is not None:
            argv = host.command(argv)
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        self.processes.append(daemon_pid(self.root / f"run/slurmd-{name}.pid"))
        wait_for(f"node {name}", lambda: "State=IDLE" in self.node(name))
        return name

    def as_configless_node(self, argv: list[str], instance_id: str) -> tuple[list[str], dict[str, str]]:
        """argv and its environment to run a configless slurmd command as on a node: slurmd authenticates through
        munge's default socket before it has a configuration, and caches the one it fetches under /run/slurm/conf,
        where the node's clients (the health check's scontrol) find it. In a mount namespace of slurmd's own, the
        test's munged is at the first and the node's own directory at the second. The head's configuration
        directory is hidden there: the node has none of its own."""
        node_run = self.root / f"node-run-{instance_id}"
        for sub in ("munge", "slurm", "etc"):
            (node_run / sub).mkdir(parents=True, exist_ok=True)
        if not (node_run / "munge/munge.socket.2").is_symlink():
            (node_run / "munge/munge.socket.2").symlink_to(self.site.munge_socket)
        wrapped = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                   'mkdir -p /run/munge /run/slurm && mount --bind "$0/munge" /run/munge && '
                   'mount --bind "$0/slurm" /run/slurm && mount --bind "$0/etc" "$1" && shift && exec "$@"',
                   str(node_run), self.site.etc_dir, *argv]
        return wrapped, {key: value for key, value in self.env.items() if key != "SLURM_CONF"}


def site_in(root: Path, node_check: str, controller_address: str = "127.0.0.1") -> SlurmSite:
    return SlurmSite(
        controller_host=socket.gethostname().split(".")[0], controller_address=controller_address,
        slurm_user=pwd.getpwuid(os.getuid()).pw_name, etc_dir=f"{root}/etc", state_dir=f"{root}/state",
        spool_dir=f"{root}/spool", run_dir=f"{root}/run", log_dir=f"{root}/log", munge_socket=f"{root}/run/munge",
        program_dir=f"{root}/programs", device_dir=f"{root}/dev", node_gres_conf=f"{root}/node-gres.conf",
        node_check=node_check, health_check_seconds=1,
        unhealthy_mark=f"{root}/run/unhealthy",
        # The container has no cgroup of its own to delegate: process groups, no task binding.
        process_tracking="proctrack/pgid", task_plugin="task/none",
        slurmctld_port=free_port(), slurmd_port=free_port(),
    )


def write_config(root: Path, site: SlurmSite, cluster: ResolvedCluster) -> None:
    """The rendered files, as the head node and the nodes hold them."""
    for sub in ("etc", "state", "spool", "run", "log", "programs", "dev", "munge"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    # The head node's slurm.conf, gres.conf and topology.conf as it carries them (and serves them to configless nodes).
    head = head_node_files(cluster, site)
    for name in ("slurm.conf", "gres.conf", "topology.conf"):
        (root / f"etc/{name}").write_text(head[f"{site.etc_dir}/{name}"][1])
    conf = root / "etc/slurm.conf"
    rendered = conf.read_text()
    assert "SlurmctldParameters=enable_configless\n" in rendered and "SchedulerParameters=" not in rendered
    conf.write_text(rendered.replace("SlurmctldParameters=enable_configless\n",
                                     f"SlurmctldParameters=enable_configless{TEST_CONTROLLER_PARAMETERS}\n")
                    + TEST_SCHEDULER_PARAMETERS)
    instance = cluster.groups[0].known_types[0]
    # The nodes' own gres.conf, which the served one includes: whole GPUs as slurm-gres.py writes them.
    Path(site.node_gres_conf).write_text(render_gres_conf(instance, site.device_dir))
    for index in range(instance.gpu.count):
        os.mknod(root / f"dev/nvidia{index}", 0o600 | 0o020000, os.makedev(1, 3))
    health = root / "programs/health-check"
    health.write_text(render_health_check(site))
    health.chmod(0o755)


@contextmanager
def running_slurm(cluster: ResolvedCluster, edit: Callable[[Path], None] | None = None,
                  controller_address: str = "127.0.0.1") -> Iterator[SlurmCluster]:
    """munged and slurmctld running with the cluster's rendered configuration in a new directory (`edit` changes the
    files in its etc/ first); stopped after. The node check passes while `root/node-check.status` exists. Nodes on
    hosts of their own (tests/slurm_hosts.py) reach slurmctld at their network's `controller_address`."""
    # A short directory: slurmstepd's Unix sockets in the spool directory take at most 108 characters.
    with tempfile.TemporaryDirectory(prefix="slurm-", dir="/tmp") as directory, slurm_on_path():
        with _running_in(Path(directory), cluster, edit, controller_address) as running:
            yield running


@contextmanager
def _running_in(root: Path, cluster: ResolvedCluster, edit: Callable[[Path], None] | None,
                controller_address: str) -> Iterator[SlurmCluster]:
    (root / "node-check.status").write_text("pass")
    check = root / "node-check"
    check.write_text("#!/bin/sh\nexec cat " + str(root / "node-check.status") + " >/dev/null\n")
    check.chmod(0o755)
    site = site_in(root, str(check), controller_address)
    write_config(root, site, cluster)
    if edit is not None:
        edit(root / "etc")
    key = root / "munge/munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    (root / "munge").chmod(0o700)
    running = SlurmCluster(root, site, cluster)
    try:
        subprocess.run(["munged", f"--socket={site.munge_socket}", f"--key-file={key}",
                        f"--pid-file={root}/run/munged.pid", f"--log-file={root}/log/munged.log",
                        f"--seed-file={root}/run/munged.seed", "--force"], check=True, capture_output=True)
        running.processes.append(daemon_pid(root / "run/munged.pid"))
        subprocess.run(["slurmctld", "-c"], env=running.env, check=True, capture_output=True, timeout=30)
        running.processes.append(daemon_pid(root / "run/slurmctld.pid"))
        wait_for("slurmctld", lambda: running.run("sinfo").returncode == 0)
        yield running
    finally:
        _stop(running.processes)
        _stop(with_descendants(processes_where(lambda process: works_in(process, root))))


def processes_where(test: Callable[[Path], bool]) -> list[int]:
    """The pids of this machine's processes whose /proc directory passes `test` (one that has gone, or that this
    process may not read, is left out)."""
    pids = []
    for entry in Path("/proc").iterdir():
        with suppress(OSError):
            if entry.name.isdigit() and test(entry):
                pids.append(int(entry.name))
    return pids


def with_descendants(pids: list[int]) -> list[int]:
    """The processes and all their children's (a step's tasks, which run where the job was submitted from)."""
    parents = {}
    for process in processes_where(lambda process: True):
        with suppress(OSError):
            # /proc/PID/stat: "pid (comm) state ppid ...", comm in parentheses and possibly holding spaces.
            parents[process] = int(Path(f"/proc/{process}/stat").read_text().rsplit(")", 1)[1].split()[1])
    found = list(pids)
    for pid in found:
        found += [child for child, parent in parents.items() if parent == pid and child not in found]
    return found


def works_in(process: Path, root: Path) -> bool:
    """Whether the process (its /proc directory) works in the cluster's directory `root`, as seen outside the root
    filesystem or inside it: the cluster's daemons and slurmstepd, which outlives slurmd by design (a restarted slurmd
    finds its steps) and runs in its log directory. Another test's cluster, on another xdist worker, numbers its
    jobs from 1 as well: a step is this cluster's only if it works here."""
    directory = os.readlink(process / "cwd")
    return any(directory == str(base) or directory.startswith(f"{base}/") for base in (root, f"{ROOTFS}{root}"))


def _stop(pids: list[int]) -> None:
    """SIGTERM to all at once, SIGKILL to any left after a moment, then wait until every one is gone (the next test's
    daemons may take their places). A test cluster's state is thrown away, so nothing needs slurmctld's clean
    shutdown, which waits seconds on its agent threads."""
    for signal in (15, 9):
        for pid in [pid for pid in pids if alive(pid)]:
            with suppress(ProcessLookupError):
                os.kill(pid, signal)
        with suppress(TimeoutError):
            wait_for("the daemons to stop", lambda: not [pid for pid in pids if alive(pid)], seconds=1.0)
    wait_for("the daemons to stop", lambda: not [pid for pid in pids if alive(pid)])


def alive(pid: int) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    except FileNotFoundError:
        return False
