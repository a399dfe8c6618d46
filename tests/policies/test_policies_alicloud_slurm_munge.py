"""alicloud-slurm-munge-key-in-secret-store over what the program registers for the shipped ebmgn8v stack turned
slurm, as it is and with the munge key's store changed."""

from __future__ import annotations

from alicloud_slurm_plans import HEAD, INSTANCE, PARAMETER, changed, named, slurm_resources
from slurm_resources import user_data_base64
from stack_rule_args import messages, res

RULE = "alicloud-slurm-munge-key-in-secret-store"
MUNGE = "gpufleet-train-dev-slurm-munge-key"


def test_what_the_program_registers_passes() -> None:
    assert messages(RULE, list(slurm_resources())) == []


def test_a_head_without_the_secret_parameter_fails() -> None:
    resources = [r for r in slurm_resources() if r.type != PARAMETER]
    ((where, message),) = messages(RULE, resources)
    assert where == named(slurm_resources(), INSTANCE, HEAD).urn
    assert message.startswith("the Slurm cluster keeps its munge key in no secret parameter")


def test_a_parameter_on_oos_default_key_or_a_service_key_fails() -> None:
    parameter = named(slurm_resources(), PARAMETER, MUNGE)
    (default,) = messages(RULE, changed(slurm_resources(), parameter, keyId=None))
    assert default == (parameter.urn, "the munge key's secret parameter is encrypted with OOS's default key: set "
                                      "key_id to the stack's customer KMS key (storage.kms_key)")
    ((_, service),) = messages(RULE, changed(slurm_resources(), parameter, keyId="alias/acs/oos"))
    assert service.startswith("the munge key's secret parameter uses the service key alias/acs/oos")


def test_a_kms_secret_or_a_plain_parameter_holding_the_key_fails() -> None:
    secret = res("alicloud:kms/secret:Secret", "munge", {"secretName": "train-munge-key", "secretData": "x",
                                                         "versionId": "v1"})
    plain = res("alicloud:oos/parameter:Parameter", "train-key", {"parameterName": "train-munge", "type": "String",
                                                                   "value": "x"})
    found = messages(RULE, [*slurm_resources(), secret, plain])
    assert [(where, message.split(",")[0].split(":")[0]) for where, message in found] == [
        (secret.urn, "a KMS Secret holds the munge key"), (plain.urn, "a plain OOS parameter holds the munge key")]


def test_user_data_writing_the_key_fails() -> None:
    head = named(slurm_resources(), INSTANCE, HEAD)
    data = user_data_base64({"/etc/slurm/slurm.conf": "ClusterName=train\n", "/etc/munge/munge.key": "k"})
    ((where, message),) = messages(RULE, changed(slurm_resources(), head, userData=data))
    assert where == head.urn
    assert message.startswith("the user data writes the munge key (/etc/munge/munge.key), readable by whoever may "
                              "describe the Instance")
