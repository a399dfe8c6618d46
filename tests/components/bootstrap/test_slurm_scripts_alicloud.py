"""The Slurm head node's key step and a node's join with Alibaba Cloud's part (scripts/slurm-alicloud.sh), as rendered
for the shipped ebmgn8v stack turned slurm: shellcheck, then run under bash against stubs. Neither the metadata service
nor OOS is here: `curl` answers the metadata service in hardened mode (a token from PUT /latest/api/token, refused
without it) with the instance RAM role's STS credentials, and `aliyun` answers OOS GetSecretParameter and
UpdateSecretParameter, refusing any call not signed with those credentials in StsToken mode. The parameter starts
holding the stand-in Pulumi creates it with."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest
from conftest import shellcheck
from slurm_stacks import slurm_cluster
from test_slurm_scripts import GROUP_CLOUD_CONFIG, HEAD_ADDRESS, Machine, head_files, joined_files

from components.bootstrap.cloud_init import cloud_part, node_script
from components.clouds.alicloud.slurm_head import MUNGE_UNSET, head_cloud_config, node_user_data
from gpufleet.clouds.backend import ResolvedCluster
from gpufleet.resolve import resolve_cluster

PARAMETER = "gpufleet-train-dev-slurm-munge-key"
ROLE = "train-dev-slurm-head-695ea1e7"
ADDRESS = "10.42.0.23"
TOKEN = "AQAEAE-metadata-token"
STS = "CAIS-security-token"
METADATA = "http://100.100.100.200/latest"

# The stub curl: the metadata service in hardened mode. Every read needs the token PUT /api/token gave.
CURL = rf"""echo "curl $*" >> "$STUB_LOG"
args=" $* "
url=${{!#}}
case $url in
  {METADATA}/api/token)
    [[ $args == *" -X PUT "* ]] || exit 22
    echo {TOKEN}; exit 0 ;;
  {METADATA}/meta-data/*)
    [[ $args == *" X-aliyun-ecs-metadata-token: {TOKEN} "* ]] || exit 22 ;;&
  {METADATA}/meta-data/ram/security-credentials/) echo {ROLE} ;;
  {METADATA}/meta-data/ram/security-credentials/{ROLE})
    echo '{{"AccessKeyId":"STS.id","AccessKeySecret":"sts-secret","SecurityToken":"{STS}","Code":"Success"}}' ;;
  {METADATA}/meta-data/instance-id) echo "$INSTANCE_ID" ;;
  {METADATA}/meta-data/instance/instance-type) echo "$INSTANCE_TYPE" ;;
  {METADATA}/meta-data/zone-id) echo cn-wulanchabu-c ;;
  {METADATA}/meta-data/private-ipv4) echo {ADDRESS} ;;
  *) exit 22 ;;
esac
"""

# The stub aliyun CLI: OOS's secret parameter, its value kept in a file (each update a new line, as versions).
ALIYUN = rf"""echo "aliyun $*" >> "$STUB_LOG"
[[ "$1 $2 $3 $4" == "--mode StsToken --region cn-wulanchabu" && $ALIBABACLOUD_SECURITY_TOKEN == {STS} &&
   $ALIBABACLOUD_ACCESS_KEY_ID == STS.id && $ALIBABACLOUD_IGNORE_PROFILE == TRUE ]] || {{ echo Forbidden >&2; exit 1; }}
shift 4
store=$FAKE/parameter
[[ -e $store ]] || echo "$UNSET" > "$store"
case "$1 $2 $3 $4" in
  "oos GetSecretParameter --Name {PARAMETER}")
    [[ "$5 $6" == "--WithDecryption true" ]] || {{ echo '{{"Parameter":{{"Value":""}}}}'; exit 0; }}
    printf '{{"Parameter":{{"Name":"{PARAMETER}","Type":"Secret","Value":"%s"}}}}\n' "$(tail -n 1 "$store")" ;;
  "oos UpdateSecretParameter --Name {PARAMETER}")
    [[ $5 == --Value ]] || exit 1
    echo "$6" >> "$store"; echo '{{"Parameter":{{"Name":"{PARAMETER}"}}}}' ;;
  *) echo "InvalidParameter" >&2; exit 1 ;;
esac
"""


def alicloud(machine: Machine) -> Machine:
    for command, body in (("curl", CURL), ("aliyun", ALIYUN)):
        (machine.stubs / command).write_text(f"#!/bin/bash\n{body}")
        (machine.stubs / command).chmod(0o755)
    return machine


@pytest.fixture
def cluster() -> ResolvedCluster:
    return resolve_cluster(slurm_cluster("alicloud-train-ebmgn8v"))


@pytest.fixture
def head(tmp_path: Path, cluster: ResolvedCluster) -> Machine:
    return alicloud(Machine(tmp_path, "head", head_files(tmp_path / "head", head_cloud_config(cluster, PARAMETER))))


def node(tmp_path: Path, cluster: ResolvedCluster) -> Machine:
    text = node_user_data(cluster, cluster.groups[0], GROUP_CLOUD_CONFIG, HEAD_ADDRESS, PARAMETER)
    return alicloud(Machine(tmp_path, "node", joined_files(text)))


def env(instance_id: str, instance_type: str) -> dict[str, str]:
    return {"INSTANCE_ID": instance_id, "INSTANCE_TYPE": instance_type, "UNSET": MUNGE_UNSET}


HEAD_ENV = env("i-0head", "ecs.g7.xlarge")


def stored(machine: Machine) -> list[str]:
    return (machine.fake / "parameter").read_text().splitlines()


@pytest.mark.parametrize("text", [node_script("alicloud-role.sh"), node_script("slurm-alicloud.sh"),
                                  cloud_part("slurm-alicloud.sh", "alicloud")])
def test_alibabas_slurm_part_passes_shellcheck(text: str, tmp_path: Path) -> None:
    path = tmp_path / "slurm-cloud.sh"
    path.write_text(text)
    result = subprocess.run([shellcheck(), "-s", "bash", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def test_the_head_makes_the_key_at_first_boot_and_stores_it_in_the_parameter(head: Machine) -> None:
    done = head.run("gpufleet-slurm-head", **HEAD_ENV)
    assert done.returncode == 0, done.stderr
    key = (head.root / "etc/munge/munge.key").read_bytes()
    assert len(key) == 1024
    assert stored(head)[0] == MUNGE_UNSET and base64.b64decode(stored(head)[1]) == key
    assert f"({ADDRESS})" in (head.root / "etc/slurm/slurm.conf").read_text()
    calls = [call.split(" --Name ")[0] for call in head.calls("aliyun")]
    assert calls == ["aliyun --mode StsToken --region cn-wulanchabu oos GetSecretParameter",
                     "aliyun --mode StsToken --region cn-wulanchabu oos UpdateSecretParameter"]
    # Every metadata read carried the hardened mode's token.
    reads = [call for call in head.calls("curl") if "/meta-data/" in call]
    assert reads and all(f"X-aliyun-ecs-metadata-token: {TOKEN}" in call for call in reads)


def test_a_head_that_boots_again_takes_the_stored_key(head: Machine) -> None:
    assert head.run("gpufleet-slurm-head", **HEAD_ENV).returncode == 0
    first = (head.root / "etc/munge/munge.key").read_bytes()
    (head.root / "etc/munge/munge.key").unlink()
    done = head.run("gpufleet-slurm-head", **HEAD_ENV)
    assert done.returncode == 0, done.stderr
    assert (head.root / "etc/munge/munge.key").read_bytes() == first
    assert len(stored(head)) == 2
    assert "munge key read from the secret store" in done.stderr


def test_a_head_that_cannot_reach_oos_stores_nothing_and_fails(head: Machine) -> None:
    (head.stubs / "aliyun").write_text("#!/bin/bash\necho \"aliyun $*\" >> \"$STUB_LOG\"\nexit 1\n")
    done = head.run("gpufleet-slurm-head", **HEAD_ENV)
    assert done.returncode != 0
    assert not (head.root / "etc/munge/munge.key").exists()


def test_a_node_takes_the_key_and_registers_under_its_instance_id(head: Machine, tmp_path: Path,
                                                                  cluster: ResolvedCluster) -> None:
    assert head.run("gpufleet-slurm-head", **HEAD_ENV).returncode == 0
    joining = node(tmp_path, cluster)
    done = joining.run("gpufleet-slurm-join", GPUFLEET_UNITS=str(joining.root / "etc/systemd/system"),
                       **env("i-2ze0node", "ecs.ebmgn8v.48xlarge"))
    assert done.returncode == 0, done.stderr
    assert (joining.root / "etc/munge/munge.key").read_bytes() == (head.root / "etc/munge/munge.key").read_bytes()
    drop_in = (joining.root / "etc/systemd/system/slurmd.service.d/gpufleet-registration.conf").read_text()
    # A node's name ends in its ECS instance id, what ESS RemoveInstances takes (slurm_capacity.py).
    assert "-Z -N h20-i-2ze0node " in drop_in and f"--conf-server {HEAD_ADDRESS}:6817" in drop_in
    assert joining.calls("systemctl") == ["systemctl restart munge.service", "systemctl daemon-reload",
                                          "systemctl --no-block restart slurmd.service"]
    assert [call.split(" --Name ")[0] for call in joining.calls("aliyun")] == [
        "aliyun --mode StsToken --region cn-wulanchabu oos GetSecretParameter"] * 2


def test_a_node_never_takes_the_stand_in_for_a_key(tmp_path: Path, cluster: ResolvedCluster) -> None:
    joining = node(tmp_path, cluster)
    settings = joining.root / "etc/gpufleet/slurm.env"
    settings.write_text(settings.read_text().replace("KEY_WAIT_SECONDS=900", "KEY_WAIT_SECONDS=0"))
    done = joining.run("gpufleet-slurm-join", GPUFLEET_UNITS=str(joining.root / "etc/systemd/system"),
                       **env("i-2ze0node", "ecs.ebmgn8v.48xlarge"))
    assert done.returncode == 1
    assert "no munge key in the secret store after 0 s" in done.stderr
    assert not (joining.root / "etc/munge/munge.key").exists()
    assert joining.calls("systemctl") == []
