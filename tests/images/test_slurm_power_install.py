"""The head node's power program as the bake installs it (images/install/slurm-power.sh from the bundle a Slurm
profile's image gets): the modules the bundle carries and the SDK wheels the lock pins, run by the installed wrapper
under the machine's python3 with nothing of this project's environment, against moto's Auto Scaling."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import tarfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import pytest
import requests
from moto import mock_aws
from pinned_wheels import wheel_files
from slurm_stacks import slurm_cluster

from components.slurm.power import render_power_config
from gpufleet.lock import load_lock
from gpufleet.lock.bundle import pack, power_program_files
from gpufleet.resolve import resolve_cluster

PROFILE = "cuda12.8-r580"
# The machine's own Python, never this project's virtual environment.
SYSTEM_PATH = "/usr/bin:/bin"
REGION = "us-east-1"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root with the power program installed by the bundle's slurm-power.sh, from the pinned wheels (or stand-ins of
    them where this environment runs the pinned release: tests/pinned_wheels.py)."""
    tmp = tmp_path_factory.mktemp("power")
    profile = load_lock().profiles[PROFILE]
    with tarfile.open(fileobj=io.BytesIO(pack(profile, "aws"))) as bundle:
        bundle.extractall(tmp / "src", filter="data")
    pairs = []
    for path in wheel_files(profile.slurm.power_wheels("aws"), tmp / "wheels").values():
        pairs += [path.as_uri(), hashlib.sha256(path.read_bytes()).hexdigest()]
    env = {"PATH": os.environ["PATH"], "GPUFLEET_ROOT": str(tmp / "root"), "GPUFLEET_CLOUD": "aws",
           "SLURM_POWER_WHEELS": " ".join(pairs)}
    done = subprocess.run(["bash", str(tmp / "src/images/install/slurm-power.sh")], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return tmp / "root"


def bundle_pins(profile: Any, cloud: str) -> str:
    with tarfile.open(fileobj=io.BytesIO(pack(profile, cloud))) as bundle:
        return bundle.extractfile("pins.env").read().decode()


@pytest.mark.parametrize("cloud", ["aws", "azure", "alicloud"])
def test_the_bundle_carries_the_power_program_where_the_lock_pins_its_sdk(cloud: str) -> None:
    profile = load_lock().profiles[PROFILE]
    with tarfile.open(fileobj=io.BytesIO(pack(profile, cloud))) as bundle:
        names = set(bundle.getnames())
    assert set(power_program_files(cloud)) <= names
    pins = bundle_pins(profile, cloud)
    assert all(f"{wheel.url} {wheel.sha256}" in pins for wheel in profile.slurm.power_wheels(cloud))
    # A profile that pins no SDK for the cloud: no program, and slurm-power.sh installs nothing.
    bare = profile.model_copy(update={"slurm": profile.slurm.model_copy(update={"power_sdk": {}})})
    with tarfile.open(fileobj=io.BytesIO(pack(bare, cloud))) as bundle:
        assert not any(name.startswith("components/") for name in bundle.getnames())
    assert "SLURM_POWER_WHEELS=" not in bundle_pins(bare, cloud)


def test_the_program_imports_only_what_the_step_installs(installed: Path) -> None:
    home = installed / "opt/gpufleet/slurm-power"
    # -S as well as -I: not even the machine's site-packages; every module comes from the install or the stdlib.
    probe = (f"import sys; sys.path[:0] = [{str(home)!r}, {str(home / 'vendor')!r}]\n"
             "import json, sysconfig\n"
             "import components.clouds.slurm_power as power\n"
             "from components.clouds.aws.slurm_capacity import capacity_in\n"
             f"capacity_in({REGION!r})\n"
             "stdlib = sysconfig.get_paths()['stdlib']\n"
             "print(json.dumps(sorted({getattr(m, '__file__', None) or '' for m in list(sys.modules.values())})))")
    done = subprocess.run(["python3", "-I", "-S", "-c", probe], capture_output=True, text=True, timeout=60,
                          check=False, env={"PATH": SYSTEM_PATH, "AWS_ACCESS_KEY_ID": "x",
                                            "AWS_SECRET_ACCESS_KEY": "x"})
    assert done.returncode == 0, done.stderr
    files = [file for file in json.loads(done.stdout) if file]
    stdlib = subprocess.run(["python3", "-I", "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])"],
                            capture_output=True, text=True, check=True, env={"PATH": SYSTEM_PATH}).stdout.strip()
    assert [file for file in files if not file.startswith((str(home), stdlib))] == []
    ours = sorted(str(Path(file).relative_to(home)) for file in files
                  if file.startswith(str(home / "components")))
    # The bundle's list is the closure: each file it packs is imported, and nothing else of the project.
    assert ours == sorted(power_program_files("aws"))
    assert not any(f"/vendor/{name}/" in file for file in files for name in ("pulumi", "pydantic"))


def test_the_wrapper_answers_a_wrong_call_with_its_usage(installed: Path) -> None:
    done = subprocess.run([str(installed / "usr/local/bin/gpufleet-slurm-power")], capture_output=True, text=True,
                          timeout=60, check=False, env={"PATH": SYSTEM_PATH})
    assert (done.returncode, done.stdout) == (2, "usage: resume HOSTLIST | suspend HOSTLIST | watch\n")


class AutoScalingForward(BaseHTTPRequestHandler):
    """Hands each request the program sends to its endpoint on to moto's in-process Auto Scaling (moto's own server
    needs flask, which this environment lacks)."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        headers = {key: value for key, value in self.headers.items() if key.lower() not in ("host", "content-length")}
        answer = requests.post(f"https://autoscaling.{REGION}.amazonaws.com{self.path}", data=body, headers=headers,
                               timeout=30)
        self.send_response(answer.status_code)
        self.send_header("Content-Type", answer.headers.get("Content-Type", "text/xml"))
        self.send_header("Content-Length", str(len(answer.content)))
        self.end_headers()
        self.wfile.write(answer.content)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def autoscaling() -> Iterator[tuple[Any, str]]:
    """moto's Auto Scaling and an endpoint URL that reaches it from another process."""
    with mock_aws():
        server = ThreadingHTTPServer(("127.0.0.1", 0), AutoScalingForward)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield boto3.client("autoscaling", region_name=REGION), f"http://127.0.0.1:{server.server_port}"
        finally:
            server.shutdown()


def test_resume_raises_the_groups_desired_capacity(installed: Path, autoscaling: tuple[Any, str],
                                                   tmp_path: Path) -> None:
    client, endpoint = autoscaling
    raw = slurm_cluster("aws-train-p5")
    raw["node_groups"][0]["size"] = {"min": 0, "desired": 0, "max": 4}
    config = tmp_path / "gpufleet-power.json"
    config.write_text(render_power_config(resolve_cluster(raw)))
    group = json.loads(config.read_text())["groups"][0]
    client.create_launch_configuration(LaunchConfigurationName="nodes", ImageId="ami-12c6146b",
                                       InstanceType="p5.48xlarge")
    client.create_auto_scaling_group(AutoScalingGroupName=group["scaling_group"], LaunchConfigurationName="nodes",
                                     MinSize=0, MaxSize=4, DesiredCapacity=0, AvailabilityZones=[f"{REGION}a"])
    # slurmctld's client: the hostlist as Slurm expands it, every other call logged.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text(
        f'#!/bin/sh\nif [ "$1 $2" = "show hostnames" ]; then echo "$3" | tr , "\\n"; exit 0; fi\n'
        f'echo "$@" >> {tmp_path}/scontrol.log\n')
    (bin_dir / "scontrol").chmod(0o755)

    done = subprocess.run(
        [str(installed / "usr/local/bin/gpufleet-slurm-power"), "resume", "h100-i-0aaa,h100-i-0bbb"],
        capture_output=True, text=True, timeout=120, check=False,
        env={"PATH": f"{bin_dir}:{SYSTEM_PATH}", "HOME": str(tmp_path), "AWS_ENDPOINT_URL": endpoint,
             "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
             "GPUFLEET_SLURM_POWER_CONFIG": str(config)})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"resume": {"h100": 2}}
    found = client.describe_auto_scaling_groups(AutoScalingGroupNames=[group["scaling_group"]])
    assert found["AutoScalingGroups"][0]["DesiredCapacity"] == 2
    assert (tmp_path / "scontrol.log").read_text().splitlines() == [
        f"update NodeName=h100-i-0{x} State=DOWN Reason=gpufleet: instance given back" for x in ("aaa", "bbb")]
