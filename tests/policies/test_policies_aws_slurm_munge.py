"""aws-slurm-munge-key-in-secret-store over hand-made resources of a Slurm cluster: the munge key's secret under the
stack's key and nothing else holding the key."""

from __future__ import annotations

import base64

from slurm_resources import CMK, cloud_config, head_node, munge_secret
from stack_rule_args import LT, messages, res, urn

RULE = "aws-slurm-munge-key-in-secret-store"
SECRET = "aws:secretsmanager/secret:Secret"
VERSION = "aws:secretsmanager/secretVersion:SecretVersion"


def test_the_contract_passes() -> None:
    assert messages(RULE, [head_node(), munge_secret()]) == []


def test_a_cluster_without_slurm_is_not_judged() -> None:
    assert messages(RULE, [res(LT, "lt", {"instanceType": "p5.48xlarge"})]) == []


def test_a_head_node_without_the_secret_fails() -> None:
    ((where, message),) = messages(RULE, [head_node()])
    assert where == urn("aws:ec2/instance:Instance", "train-dev-slurm-head")
    assert message.startswith("the Slurm cluster keeps its munge key in no secret: create an "
                              "aws.secretsmanager.Secret")


def test_the_secret_on_the_aws_managed_key_fails() -> None:
    ((where, message),) = messages(RULE, [head_node(), munge_secret(kmsKeyId=None)])
    assert where == urn(SECRET, "train-dev-munge-key")
    assert "aws/secretsmanager: set kms_key_id to the stack's customer-managed KMS key" in message
    ((_, message),) = messages(RULE, [head_node(), munge_secret(kmsKeyId="alias/aws/secretsmanager")])
    assert "uses the AWS-managed key alias/aws/secretsmanager: set kms_key_id" in message


def test_a_secret_version_of_the_key_fails_by_dependency_or_name() -> None:
    secret = munge_secret()
    by_dependency = res(VERSION, "key-version", {"secretId": "arn:unknown", "secretString": "c2VjcmV0"},
                        depends_on=(secret.urn,), property_dependencies={"secretId": (secret.urn,)})
    by_name = res(VERSION, "other", {"secretId": "train-dev-munge-key", "secretString": "c2VjcmV0"})
    found = messages(RULE, [head_node(), secret, by_dependency, by_name])
    assert [where for where, _ in found] == [by_dependency.urn, by_name.urn]
    assert found[0][1].startswith("a SecretVersion holds the munge key, so its value sits in Pulumi state: remove "
                                  "the SecretVersion; the head node generates the key at first boot")


def test_a_version_of_another_secret_passes() -> None:
    other = res(SECRET, "train-dev-api-token", {"name": "train-dev-api-token", "kmsKeyId": CMK})
    version = res(VERSION, "token", {"secretId": "x", "secretString": "y"}, depends_on=(other.urn,),
                  property_dependencies={"secretId": (other.urn,)})
    assert messages(RULE, [head_node(), munge_secret(), other, version]) == []


def test_user_data_writing_the_key_fails() -> None:
    template = res(LT, "train-h100-lt", {"userData": base64.b64encode(cloud_config(
        {"/etc/munge/munge.key": "not a real key"}).encode()).decode()})
    ((where, message),) = messages(RULE, [head_node(), munge_secret(), template])
    assert where == template.urn
    assert message.startswith("the user data writes the munge key (/etc/munge/munge.key), readable by whoever may "
                              "describe the launch template: remove it")


def test_an_ssm_parameter_holding_the_key_fails() -> None:
    parameter = res("aws:ssm/parameter:Parameter", "munge", {"name": "/train/munge-key", "type": "SecureString"})
    ((where, message),) = messages(RULE, [head_node(), munge_secret(), parameter])
    assert where == parameter.urn
    assert message.startswith("an SSM parameter holds the munge key, outside the secret store")
