"""The image's own daemon command lines under the real Slurm (Ubuntu resolute's 25.11.2, tests/slurm_rootfs.py; the
image runs SchedMD's 25.11.5 with its units, tests/data/slurm/schedmd-25.11.5): Type=notify units, so each daemon must
say READY=1 on $NOTIFY_SOCKET under `--systemd`; slurmd configless (`--conf-server`) with the node's registration,
slurmctld on the rendered files."""

from __future__ import annotations

import re
import shlex
import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from local_registry import free_port
from slurm_daemons import running_slurm, wait_for
from slurm_stacks import slurm_cluster

from components.slurm.node_files import INSTANCE_ID, SLURMD, registration_table
from gpufleet.resolve import resolve_cluster

pytestmark = pytest.mark.waits  # on daemons and processes: scheduled first (tests/conftest.py)


@contextmanager
def ready_under_systemd(command: list[str], env: dict[str, str], notify: Path) -> Iterator[None]:
    """`command` running in the foreground as a Type=notify unit runs it, once it said READY=1 on $NOTIFY_SOCKET
    (sd_notify(3)); stopped after."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener:
        listener.bind(str(notify))
        listener.settimeout(60)
        daemon = subprocess.Popen(command, env={**env, "NOTIFY_SOCKET": str(notify)}, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            messages = ""
            while "READY=1" not in messages:
                messages += listener.recv(4096).decode()
            yield
        finally:
            daemon.terminate()
            try:
                daemon.wait(30)
            except subprocess.TimeoutExpired:  # no daemon left behind for the next test's ports
                daemon.kill()
                daemon.wait(30)


def test_the_images_slurmd_command_line_is_ready_under_systemd_and_joins_its_switch() -> None:
    # As the image's slurmd.service runs it (Type=notify), configless from the head node's address and port. Alone
    # with its controller: it takes the cluster's SlurmdPort.
    with running_slurm(resolve_cluster(slurm_cluster())) as running:
        server = f"{running.site.controller_address}:{running.site.slurmctld_port}"
        line = registration_table(running.cluster.groups[0], server).splitlines()[0]
        _type, _zone, *argv = shlex.split(line.replace(INSTANCE_ID, "n5"))
        assert argv[:2] == [SLURMD, "--systemd"] and argv[-2:] == ["--conf-server", server]
        # The image's /usr/sbin/slurmd is the root filesystem's here (its shim on PATH).
        command, env = running.as_configless_node(["slurmd", *argv[1:]], "n5")
        with ready_under_systemd(command, env, running.root / "notify"):
            wait_for("the node", lambda: "State=IDLE" in running.node("h100-n5"))
            assert "Topology=default:fabric-h100" in running.node("h100-n5")


def test_the_images_slurmctld_command_line_is_ready_under_systemd_on_the_rendered_files() -> None:
    # As SchedMD's slurmctld.service runs it (ExecStart `slurmctld --systemd`, tests/data/slurm/schedmd-25.11.5): a
    # second controller beside the running one, on the rendered files with its own port, state, pid file (slurmctld
    # stops the process a pid file names) and log.
    with running_slurm(resolve_cluster(slurm_cluster())) as running:
        root = running.root
        etc = root / "etc-systemd"
        shutil.copytree(root / "etc", etc)
        conf = (etc / "slurm.conf").read_text()
        for key, value in (("SlurmctldPort", str(free_port())), ("StateSaveLocation", f"{root}/state-systemd"),
                           ("SlurmctldPidFile", f"{root}/run/slurmctld-systemd.pid"),
                           ("SlurmctldLogFile", f"{root}/log/slurmctld-systemd.log")):
            conf = re.sub(rf"^{key}=.*$", f"{key}={value}", conf, flags=re.M)
        (etc / "slurm.conf").write_text(conf)
        (root / "state-systemd").mkdir()
        env = {**running.env, "SLURM_CONF": str(etc / "slurm.conf")}
        with ready_under_systemd(["slurmctld", "--systemd"], env, root / "notify-slurmctld"):
            ping = subprocess.run(["scontrol", "ping"], env=env, capture_output=True, text=True, check=False)
            assert "is UP" in ping.stdout, ping.stdout + ping.stderr
