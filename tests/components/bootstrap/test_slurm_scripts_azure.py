"""The Slurm head node's key step and a node's join with Azure's part (scripts/slurm-azure.sh), as rendered for the
shipped ND H100 stack turned slurm: shellcheck, then run under bash against stubs. Neither IMDS nor Key Vault is here:
`curl` answers the instance metadata paths, the identity's token for Key Vault, and Key Vault's Get Secret (404 while
none is stored, as `curl -f` sees it) and Set Secret (each a new version), keeping the versions in a directory."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from slurm_stacks import slurm_cluster
from test_slurm_scripts import GROUP_CLOUD_CONFIG, HEAD_ADDRESS, Machine, head_files, joined_files

from components.clouds.azure.slurm_head import head_cloud_config, node_user_data
from components.clouds.azure.slurm_identity import MUNGE_SECRET_NAME
from gpufleet.clouds.backend import ResolvedCluster
from gpufleet.resolve import resolve_cluster

VAULT = "train-disk-5918b771"
SCALE_SET = "gpufleet-train-dev-h100"
ADDRESS = "10.42.0.17"
TOKEN = "eyJ0eXAiOiJKV1Qi.vault"
SECRET_URL = f"https://{VAULT}.vault.azure.net/secrets/{MUNGE_SECRET_NAME}?api-version=7.4"

# The stub curl: IMDS (Metadata: true) and Key Vault with the identity's bearer token. Get Secret prints the newest
# version's JSON with "/" escaped as JSON may write it; Set Secret reads the body from stdin.
CURL = rf"""echo "curl $*" >> "$STUB_LOG"
args=" $* "
url=${{!#}}
store=$FAKE/secret
mkdir -p "$store"
case $url in
  http://169.254.169.254/metadata/*)
    [[ $args == *" Metadata:true "* ]] || exit 22 ;;&
  http://169.254.169.254/metadata/identity/oauth2/token\?*resource=https%3A%2F%2Fvault.azure.net)
    echo '{{"access_token":"{TOKEN}","expires_in":"86399","token_type":"Bearer"}}' ;;
  http://169.254.169.254/metadata/instance/compute/name\?*) echo "$VM_NAME" ;;
  http://169.254.169.254/metadata/instance/compute/vmScaleSetName\?*) echo "$SCALE_SET" ;;
  http://169.254.169.254/metadata/instance/compute/vmSize\?*) echo Standard_ND96isr_H100_v5 ;;
  http://169.254.169.254/metadata/instance/compute/zone\?*) echo 1 ;;
  http://169.254.169.254/metadata/instance/network/interface/0/ipv4/ipAddress/0/privateIpAddress\?*) echo {ADDRESS} ;;
  "{SECRET_URL}")
    [[ $args == *" Authorization: Bearer {TOKEN} "* ]] || exit 22
    if [[ $args == *" -X PUT "* ]]; then
      value=$(sed -n 's/.*"value":"\([^"]*\)".*/\1/p')
      echo "$value" > "$store/$(($(ls "$store" | wc -l) + 1))"
      echo "{{\"value\":\"$value\"}}"
    else
      newest=$(ls "$store" | sort -n | tail -n 1); [[ -n $newest ]] || exit 22
      printf '{{"value":"%s","id":"https://{VAULT}.vault.azure.net/secrets/{MUNGE_SECRET_NAME}/%s"}}\n' \
        "$(sed 's#/#\\/#g' "$store/$newest")" "$newest"
    fi ;;
  *) exit 22 ;;
esac
"""


def azure(machine: Machine) -> Machine:
    (machine.stubs / "curl").write_text(f"#!/bin/bash\n{CURL}")
    return machine


@pytest.fixture
def cluster() -> ResolvedCluster:
    return resolve_cluster(slurm_cluster("azure-train-ndh100"))


@pytest.fixture
def head(tmp_path: Path, cluster: ResolvedCluster) -> Machine:
    return azure(Machine(tmp_path, "head", head_files(tmp_path / "head", head_cloud_config(cluster, VAULT))))


def node(tmp_path: Path, cluster: ResolvedCluster) -> Machine:
    text = node_user_data(cluster, cluster.groups[0], GROUP_CLOUD_CONFIG, HEAD_ADDRESS, VAULT)
    return azure(Machine(tmp_path, "node", joined_files(text)))


def env(vm_name: str) -> dict[str, str]:
    return {"VM_NAME": vm_name, "SCALE_SET": SCALE_SET}


def test_the_head_makes_the_key_at_first_boot_and_sets_it_in_key_vault(head: Machine) -> None:
    done = head.run("gpufleet-slurm-head", **env("train-dev-slurm-head"))
    assert done.returncode == 0, done.stderr
    key = (head.root / "etc/munge/munge.key").read_bytes()
    assert len(key) == 1024
    assert base64.b64decode((head.fake / "secret/1").read_text()) == key
    conf = (head.root / "etc/slurm/slurm.conf").read_text()
    assert f"({ADDRESS})" in conf
    secret_calls = [call for call in head.calls("curl") if SECRET_URL in call]
    assert len(secret_calls) == 2 and " -X PUT " in secret_calls[1]


def test_a_head_that_boots_again_takes_the_stored_key(head: Machine) -> None:
    assert head.run("gpufleet-slurm-head", **env("train-dev-slurm-head")).returncode == 0
    first = (head.root / "etc/munge/munge.key").read_bytes()
    (head.root / "etc/munge/munge.key").unlink()
    done = head.run("gpufleet-slurm-head", **env("train-dev-slurm-head"))
    assert done.returncode == 0, done.stderr
    assert (head.root / "etc/munge/munge.key").read_bytes() == first
    assert sorted(p.name for p in (head.fake / "secret").iterdir()) == ["1"]
    assert "munge key read from the secret store" in done.stderr


def test_a_uniform_node_takes_the_key_and_registers_under_its_instance_number(head: Machine, tmp_path: Path,
                                                                               cluster: ResolvedCluster) -> None:
    assert head.run("gpufleet-slurm-head", **env("train-dev-slurm-head")).returncode == 0
    joining = node(tmp_path, cluster)
    done = joining.run("gpufleet-slurm-join", GPUFLEET_UNITS=str(joining.root / "etc/systemd/system"),
                       **env(f"{SCALE_SET}_7"))
    assert done.returncode == 0, done.stderr
    assert (joining.root / "etc/munge/munge.key").read_bytes() == (head.root / "etc/munge/munge.key").read_bytes()
    drop_in = (joining.root / "etc/systemd/system/slurmd.service.d/gpufleet-registration.conf").read_text()
    # The Uniform scale set's instance id (what Delete Instances takes), not the VM's name.
    assert "-Z -N h100-7 " in drop_in and f"--conf-server {HEAD_ADDRESS}:6817" in drop_in
    assert joining.calls("systemctl") == ["systemctl restart munge.service", "systemctl daemon-reload",
                                          "systemctl --no-block restart slurmd.service"]


def test_a_node_without_a_stored_key_never_starts_slurmd(tmp_path: Path, cluster: ResolvedCluster) -> None:
    joining = node(tmp_path, cluster)
    settings = joining.root / "etc/gpufleet/slurm.env"
    settings.write_text(settings.read_text().replace("KEY_WAIT_SECONDS=900", "KEY_WAIT_SECONDS=0"))
    done = joining.run("gpufleet-slurm-join", GPUFLEET_UNITS=str(joining.root / "etc/systemd/system"),
                       **env(f"{SCALE_SET}_7"))
    assert done.returncode == 1
    assert "no munge key in the secret store after 0 s" in done.stderr
    assert joining.calls("systemctl") == []


def test_a_flexible_node_registers_under_its_vm_name(tmp_path: Path, head: Machine, cluster: ResolvedCluster) -> None:
    # A Flexible scale set's VM goes by its name in Delete Instances (components/clouds/azure/slurm_capacity.py).
    assert head.run("gpufleet-slurm-head", **env("train-dev-slurm-head")).returncode == 0
    joining = node(tmp_path, cluster)
    settings = joining.root / "etc/gpufleet/slurm.env"
    settings.write_text(settings.read_text().replace("SCALE_SET_MODE=Uniform", "SCALE_SET_MODE=Flexible"))
    done = joining.run("gpufleet-slurm-join", GPUFLEET_UNITS=str(joining.root / "etc/systemd/system"),
                       **env(f"{SCALE_SET}_1a2b3c4d"))
    assert done.returncode == 0, done.stderr
    drop_in = (joining.root / "etc/systemd/system/slurmd.service.d/gpufleet-registration.conf").read_text()
    assert f"-Z -N h100-{SCALE_SET}_1a2b3c4d " in drop_in
