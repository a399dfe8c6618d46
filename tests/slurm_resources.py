"""Hand-made AWS resources of a Slurm cluster for the Slurm rules' tests: the head node as its contract describes it
(an ec2.Instance tagged gpufleet:role slurm-head, gzip'd cloud-config writing slurm.conf in user_data_base64), its
security group and the munge key's secret."""

from __future__ import annotations

import base64
import gzip
from typing import Any

import libyaml_files
from stack_rule_args import SG, res, urn

from gpufleet.plan.record import RecordedResource

INSTANCE = "aws:ec2/instance:Instance"
SECRET = "aws:secretsmanager/secret:Secret"
CMK = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def packed(content: str) -> str:
    """A write_files content as the project packs it (encoding gz+b64)."""
    return base64.b64encode(gzip.compress(content.encode(), mtime=0)).decode()


def cloud_config(files: dict[str, str]) -> str:
    entries = [{"path": path, "permissions": "0644", "encoding": "gz+b64", "content": packed(text)}
               for path, text in files.items()]
    return "#cloud-config\n" + libyaml_files.dump({"write_files": entries})


def user_data_base64(files: dict[str, str]) -> str:
    """The user data gzip'd whole and base64'd, as ec2.Instance user_data_base64 takes it."""
    return base64.b64encode(gzip.compress(cloud_config(files).encode(), mtime=0)).decode()


def head_node(slurm_conf: str = "ClusterName=train-dev\n", name: str = "train-dev-slurm-head",
              security_groups: tuple[str, ...] = ("train-dev-slurm-head",),
              dependencies: dict[str, tuple[str, ...]] | None = None, **inputs: Any) -> RecordedResource:
    """`dependencies`: property -> URNs the instance's other inputs come from (its subnet...)."""
    sg_urns = tuple(urn(SG, group) for group in security_groups)
    given = {"vpcSecurityGroupIds": sg_urns, **(dependencies or {})}
    return res(INSTANCE, name, {
        "instanceType": "m7i.xlarge", "associatePublicIpAddress": False,
        "tags": {"gpufleet:role": "slurm-head"}, "vpcSecurityGroupIds": [f"sg-{g}" for g in security_groups],
        "userDataBase64": user_data_base64({"/etc/slurm/slurm.conf": slurm_conf}), **inputs,
    }, depends_on=tuple(u for urns in given.values() for u in urns), property_dependencies=given)


def head_group(name: str = "train-dev-slurm-head", ingress: list[dict[str, Any]] | None = None) -> RecordedResource:
    return res(SG, name, {"vpcId": "vpc-1", "ingress": ingress or [], "egress": []})


def munge_secret(**inputs: Any) -> RecordedResource:
    return res(SECRET, "train-dev-munge-key", {"name": "train-dev-munge-key", "kmsKeyId": CMK, **inputs})
