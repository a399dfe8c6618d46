"""azure-slurm-munge-key-in-vault over the head node the program renders and hand-made resources holding the key."""

from __future__ import annotations

import base64

from azure_slurm_resources import VM, head_vm
from stack_rule_args import messages, res, urn

RULE = "azure-slurm-munge-key-in-vault"
SECRET = "azure-native:keyvault:Secret"
KEY_FILE = "#cloud-config\nwrite_files:\n- path: /etc/munge/munge.key\n  content: c2VjcmV0\n  encoding: b64\n"


def test_the_rendered_head_node_passes() -> None:
    assert messages(RULE, [head_vm()]) == []


def test_a_key_vault_secret_resource_for_the_key_fails() -> None:
    secret = res(SECRET, "train-dev-munge", {"secretName": "slurm-munge-key", "properties": {"value": "c2VjcmV0"}})
    ((where, message),) = messages(RULE, [head_vm(), secret])
    assert where == secret.urn
    assert message.startswith("a Key Vault Secret resource holds the munge key, so its value sits in Pulumi state")


def test_the_empty_secret_the_deploy_makes_passes() -> None:
    # The scope of the munge key's role assignments, made before the head node sets the key as a new version.
    secret = res(SECRET, "train-dev-slurm-munge-key", {
        "secretName": "slurm-munge-key", "properties": {"value": "", "contentType": "application/octet-stream;base64"}})
    assert messages(RULE, [head_vm(), secret]) == []


def test_custom_data_writing_the_key_fails() -> None:
    vm = res(VM, "other", {"osProfile": {"customData": base64.b64encode(KEY_FILE.encode()).decode()}})
    ((where, message),) = messages(RULE, [head_vm(), vm])
    assert where == vm.urn and "writes the munge key (/etc/munge/munge.key)" in message


def test_a_head_node_naming_no_vault_fails() -> None:
    plain = "#cloud-config\nwrite_files:\n- path: /etc/slurm/slurm.conf\n  content: ClusterName=train\n"
    ((where, message),) = messages(RULE, [head_vm(custom_data=base64.b64encode(plain.encode()).decode())])
    assert where == urn(VM, "train-dev-slurm-head")
    assert "names no Key Vault for its munge key" in message
