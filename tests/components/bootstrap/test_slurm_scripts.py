"""The Slurm head node's key step (scripts/slurm-head.sh) and a node's join (scripts/slurm-join.sh) with AWS's part
(scripts/slurm-aws.sh), as rendered for the shipped p5 stack turned slurm: shellcheck, then run under bash against
stubs. The AWS CLI v2 and the instance metadata service are not here: `aws` is a stub keeping the secret's versions
in a directory as Secrets Manager keeps them (DescribeSecret's VersionIdsToStages, SecretBinary base64 on output,
fileb:// on input), `curl` answers IMDSv2's paths, `systemctl` only logs."""

from __future__ import annotations

import os
import pwd
import re
import socket
import subprocess
from pathlib import Path

import boto3
import jmespath
import libyaml_files
import pytest
from conftest import shellcheck
from moto import mock_aws
from slurm_stacks import files_of, slurm_cluster

from components.bootstrap.cloud_init import node_script
from components.clouds.aws.slurm_head import head_cloud_config
from components.slurm.head_files import head_site
from components.slurm.node_files import node_join_files
from gpufleet.resolve import resolve_cluster

SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:train-dev-munge-key-abc123"
INSTANCE_ID = "i-0123456789abcdef0"
ADDRESS = "10.42.3.17"
HEAD_ADDRESS = "10.42.1.5"
# The group's own cloud-config, bare: what a cloud's node user data adds the Slurm join to.
GROUP_CLOUD_CONFIG = "#cloud-config\nwrite_files: []\nruncmd:\n- [systemctl, enable]\n- [systemctl, start]\n"
USER = pwd.getpwuid(os.getuid()).pw_name

# The stub AWS CLI: each `put-secret-value` a new version file; describe prints the number of versions the JMESPath
# query counts; get prints the newest, base64 as the CLI prints a blob.
AWS = r"""echo "aws $*" >> "$STUB_LOG"
store=$FAKE/secret
mkdir -p "$store"
args=" $* "
[[ $args == *" --secret-id $EXPECT_SECRET "* && $args == *" --region us-east-1 "* ]] || exit 254
case $2 in
  describe-secret) ls "$store" | wc -l ;;
  get-secret-value) newest=$(ls "$store" | sort -n | tail -n 1); [[ -n $newest ]] || exit 254
                    base64 -w0 "$store/$newest"; echo ;;
  put-secret-value) for a; do [[ $a == fileb://* ]] && src=${a#fileb://}; done
                    cp "$src" "$store/$(($(ls "$store" | wc -l) + 1))" ;;
  *) exit 252 ;;
esac
"""
CURL = f"""echo "curl $*" >> "$STUB_LOG"
case ${{!#}} in
  */api/token) echo token ;;
  */meta-data/instance-id) echo {INSTANCE_ID} ;;
  */meta-data/instance-type) echo p5.48xlarge ;;
  */meta-data/placement/availability-zone) echo us-east-1a ;;
  */meta-data/local-ipv4) echo {ADDRESS} ;;
  *) exit 22 ;;
esac
"""


def install(root: Path, files: dict[str, tuple[str, str]]) -> None:
    for path, (mode, text) in files.items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        target.chmod(int(mode, 8))


class Machine:
    """Rendered files under `root` (as cloud-init writes them under /) and stub commands."""

    def __init__(self, tmp_path: Path, name: str, files: dict[str, tuple[str, str]]) -> None:
        self.root = tmp_path / name
        self.fake = tmp_path / "fake"  # shared: the secret store of one cluster
        self.stubs = tmp_path / f"{name}-stubs"
        self.log = tmp_path / f"{name}-calls.log"
        install(self.root, files)
        (self.root / "etc/munge").mkdir(parents=True)  # the image's munge package makes it
        for directory in (self.stubs, self.fake):
            directory.mkdir(parents=True, exist_ok=True)
        self.log.touch()
        stubs = (("aws", AWS), ("curl", CURL), ("systemctl", 'echo "systemctl $*" >> "$STUB_LOG"'),
                 ("gpufleet-slurm-gres", 'echo "gpufleet-slurm-gres $*" >> "$STUB_LOG"; exit "${GRES_EXIT:-0}"'))
        for command, body in stubs:
            (self.stubs / command).write_text(f"#!/bin/bash\n{body}")
            (self.stubs / command).chmod(0o755)

    def run(self, program: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(self.root / "usr/local/sbin" / program)], capture_output=True, text=True, timeout=60,
            env={"PATH": f"{self.stubs}:/usr/bin:/bin", "STUB_LOG": str(self.log), "FAKE": str(self.fake),
                 "EXPECT_SECRET": SECRET, "GPUFLEET_ETC": str(self.root / "etc/gpufleet"),
                 "GPUFLEET_LIB": str(self.root / "usr/local/lib/gpufleet"),
                 "GPUFLEET_MUNGE_KEY": str(self.root / "etc/munge/munge.key"), "GPUFLEET_MUNGE_USER": USER, **env})

    def calls(self, command: str) -> list[str]:
        return [line for line in self.log.read_text().splitlines() if line.startswith(f"{command} ")]


def head_files(root: Path, cloud_config: str | None = None) -> dict[str, tuple[str, str]]:
    """The head node's files as its user data (AWS's, or `cloud_config`) writes them, the settings' paths and user
    moved under `root`."""
    cloud_config = cloud_config or head_cloud_config(resolve_cluster(slurm_cluster("aws-train-p5")), SECRET)
    document = libyaml_files.load(cloud_config)
    files = {entry["path"]: (entry["permissions"], entry["content"]) for entry in document["write_files"]}
    mode, settings = files["/etc/gpufleet/bootstrap.env"]
    site = head_site()
    for directory in (site.etc_dir, site.state_dir, site.run_dir, site.log_dir):
        settings = settings.replace(directory, f"{root}{directory}")
    files["/etc/gpufleet/bootstrap.env"] = (mode, settings.replace(f"SLURM_USER={site.slurm_user}",
                                                                   f"SLURM_USER={USER}"))
    return files


def joined_files(user_data: str) -> dict[str, tuple[str, str]]:
    """A node's files as its cloud-config (a group's user data with the Slurm join) writes them, with common.sh and
    an empty bootstrap.env (the group's settings, which the join does not read)."""
    document = libyaml_files.load(user_data)
    modes = {entry["path"]: entry["permissions"] for entry in document["write_files"]}
    files = {path: (modes[path], content) for path, content in files_of(document).items()}
    files["/usr/local/lib/gpufleet/common.sh"] = ("0644", node_script("common.sh"))
    files["/etc/gpufleet/bootstrap.env"] = ("0600", "")
    return files


@pytest.fixture
def head(tmp_path: Path) -> Machine:
    return Machine(tmp_path, "head", head_files(tmp_path / "head"))


def node(tmp_path: Path) -> Machine:
    group = resolve_cluster(slurm_cluster("aws-train-p5")).groups[0]
    files = node_join_files(group, head_site(), "aws", HEAD_ADDRESS,
                            {"GPUFLEET_SLURM_REGION": "us-east-1", "GPUFLEET_MUNGE_SECRET": SECRET})
    files["/usr/local/lib/gpufleet/common.sh"] = ("0644", node_script("common.sh"))
    files["/etc/gpufleet/bootstrap.env"] = ("0600", "")  # the group's settings, which the join does not read
    return Machine(tmp_path, "node", files)


@pytest.mark.parametrize("script", ["slurm-head.sh", "slurm-join.sh", "slurm-aws.sh", "slurm-azure.sh"])
def test_the_slurm_scripts_pass_shellcheck(script: str, tmp_path: Path) -> None:
    path = tmp_path / script
    path.write_text(node_script(script))
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0
    result = subprocess.run([shellcheck(), "-s", "bash", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def test_the_head_makes_the_key_at_first_boot_and_stores_it(head: Machine) -> None:
    done = head.run("gpufleet-slurm-head")
    assert done.returncode == 0, done.stderr
    key = (head.root / "etc/munge/munge.key").read_bytes()
    assert len(key) == 1024
    assert oct((head.root / "etc/munge/munge.key").stat().st_mode & 0o777) == "0o400"
    assert (head.fake / "secret/1").read_bytes() == key
    assert [call.split()[1:3] for call in head.calls("aws")] == [["secretsmanager", "describe-secret"],
                                                                 ["secretsmanager", "put-secret-value"]]
    conf = (head.root / "etc/slurm/slurm.conf").read_text().splitlines()
    assert f"SlurmctldHost={socket.gethostname().split('.')[0]}({ADDRESS})" in conf
    assert all((head.root / d.lstrip("/")).is_dir() for d in ("var/spool/slurmctld", "run/slurm", "var/log/slurm"))


def test_a_head_that_boots_again_takes_the_stored_key(head: Machine) -> None:
    assert head.run("gpufleet-slurm-head").returncode == 0
    first = (head.root / "etc/munge/munge.key").read_bytes()
    (head.root / "etc/munge/munge.key").unlink()  # a new head node's disk
    done = head.run("gpufleet-slurm-head")
    assert done.returncode == 0, done.stderr
    assert (head.root / "etc/munge/munge.key").read_bytes() == first
    assert sorted(p.name for p in (head.fake / "secret").iterdir()) == ["1"]  # no second version
    assert "munge key read from the secret store" in done.stderr


def test_a_node_takes_the_heads_key_and_registers_configless(head: Machine, tmp_path: Path) -> None:
    assert head.run("gpufleet-slurm-head").returncode == 0
    joining = node(tmp_path)
    done = joining.run("gpufleet-slurm-join", GPUFLEET_UNITS=str(joining.root / "etc/systemd/system"))
    assert done.returncode == 0, done.stderr
    assert (joining.root / "etc/munge/munge.key").read_bytes() == (head.root / "etc/munge/munge.key").read_bytes()
    drop_in = (joining.root / "etc/systemd/system/slurmd.service.d/gpufleet-registration.conf").read_text()
    assert drop_in == (
        "[Service]\nExecStart=\nExecStart=/usr/sbin/slurmd --systemd -Z -N h100-" + INSTANCE_ID
        + ' --conf "Gres=gpu:h100:8 Feature=h100,p5.48xlarge,efa,us-east-1a Topology=default:fabric-h100"'
        + f" --conf-server {HEAD_ADDRESS}:6817\n")
    assert joining.calls("systemctl") == ["systemctl restart munge.service", "systemctl daemon-reload",
                                          "systemctl --no-block restart slurmd.service"]
    # The node's own gres.conf, which the served one includes, written before slurmd starts.
    assert joining.calls("gpufleet-slurm-gres") == [
        f"gpufleet-slurm-gres {joining.root}/etc/gpufleet/slurm-gres.json p5.48xlarge"]


def test_a_node_whose_gres_file_fails_never_starts_slurmd(head: Machine, tmp_path: Path) -> None:
    # slurm-gres.py fails where the node's MIG devices differ from what it registers: the node does not join.
    assert head.run("gpufleet-slurm-head").returncode == 0
    joining = node(tmp_path)
    done = joining.run("gpufleet-slurm-join", GPUFLEET_UNITS=str(joining.root / "etc/systemd/system"), GRES_EXIT="1")
    assert done.returncode == 1 and "no gres.conf for this node: it does not join" in done.stderr
    assert joining.calls("systemctl") == []
    assert not (joining.root / "etc/systemd/system/slurmd.service.d/gpufleet-registration.conf").exists()


def test_a_node_without_a_stored_key_never_starts_slurmd(tmp_path: Path) -> None:
    joining = node(tmp_path)
    settings = joining.root / "etc/gpufleet/slurm.env"
    settings.write_text(settings.read_text().replace("KEY_WAIT_SECONDS=900", "KEY_WAIT_SECONDS=0"))
    done = joining.run("gpufleet-slurm-join", GPUFLEET_UNITS=str(joining.root / "etc/systemd/system"))
    assert done.returncode == 1
    assert "no munge key in the secret store after 0 s" in done.stderr
    assert joining.calls("systemctl") == []


def test_a_node_of_a_type_the_group_lacks_is_not_registered(tmp_path: Path) -> None:
    joining = node(tmp_path)
    (joining.stubs / "curl").write_text("#!/bin/bash\n" + CURL.replace("echo p5.48xlarge", "echo p4d.24xlarge"))
    done = joining.run("gpufleet-slurm-join", GPUFLEET_UNITS=str(joining.root / "etc/systemd/system"))
    assert done.returncode == 1 and "no Slurm registration for p4d.24xlarge in us-east-1a" in done.stderr



def test_the_key_step_tells_a_secret_without_a_value_as_secrets_manager_describes_it() -> None:
    # slurm-aws.sh decides "make the key" or "take the stored key" from DescribeSecret, by the JMESPath query the CLI
    # applies. Secrets Manager (moto's, through boto3's own client) leaves VersionIdsToStages out of a secret that
    # has no value yet: the query must count that as none, not fail; GetSecretValue would only fail there.
    query = re.search(r"--query '([^']+)'", node_script("slurm-aws.sh")).group(1)
    with mock_aws():
        key = boto3.client("kms", region_name="us-east-1").create_key()["KeyMetadata"]["Arn"]
        secrets = boto3.client("secretsmanager", region_name="us-east-1")
        arn = secrets.create_secret(Name="train-dev-munge-key", KmsKeyId=key)["ARN"]
        assert jmespath.search(query, secrets.describe_secret(SecretId=arn)) == 0
        with pytest.raises(secrets.exceptions.ResourceNotFoundException):
            secrets.get_secret_value(SecretId=arn)
        secrets.put_secret_value(SecretId=arn, SecretBinary=os.urandom(1024))
        assert jmespath.search(query, secrets.describe_secret(SecretId=arn)) == 1
