"""Every IAM, KMS key and SNS topic policy document of every shipped stack's plan, through parliament.

parliament reads each document as an identity policy. Resource policies differ in ways AWS documents,
and only those are allowed below (each with its source); any other finding fails the test.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from conftest import read_cluster, write_stack
from parliament import analyze_policy_string

from gpufleet.plan.planner import plan_stack

# (resource type, input holding a policy document) -> kind of document.
POLICY_INPUTS = {
    ("aws:iam/role:Role", "assumeRolePolicy"): "trust",
    ("aws:iam/rolePolicy:RolePolicy", "policy"): "iam",
    ("aws:iam/policy:Policy", "policy"): "iam",
    ("aws:kms/key:Key", "policy"): "key",
    ("aws:kms/replicaKey:ReplicaKey", "policy"): "key",
    ("aws:kms/keyPolicy:KeyPolicy", "policy"): "key",
    ("aws:sns/topic:Topic", "policy"): "topic",
    ("aws:sns/topicPolicy:TopicPolicy", "policy"): "topic",
}


LOGS_ARNLIKE_DETAIL = "Type mismatch: ArnLike requires a value of type Arn but given String"


@dataclass(frozen=True)
class Document:
    stack: str
    resource: str
    kind: str
    text: str


def allowed(kind: str, issue: str, detail: object) -> bool:
    # A role's trust policy names who may assume the role and has no Resource element
    # (IAM user guide, "Role trust policy"); parliament expects one in every statement.
    if kind == "trust" and issue == "MALFORMED" and detail == "Statement contains neither Resource nor NotResource":
        return True
    # In a key policy, Resource "*" means "this key" (KMS developer guide, "Key policies"): every
    # statement of one has it, including the account root's kms:* (AWS's default delegation to IAM).
    if kind == "key" and issue == "RESOURCE_STAR" and all(str(a).startswith("kms:") for a in detail):
        return True
    # The CloudWatch Logs statement exactly as AWS documents it ("Encrypt log data in CloudWatch Logs using
    # AWS KMS"): kms:Describe* under an ArnLike condition on kms:EncryptionContext:aws:logs:arn. parliament
    # types that key as a String and does not list it for the Describe actions.
    logs_condition = "kms:EncryptionContext:aws:logs:arn"
    if kind == "key" and issue == "UNKNOWN_CONDITION_FOR_ACTION":
        return str(detail).startswith(f"Unknown condition {logs_condition} for action kms:Describe")
    return kind == "key" and issue == "MISMATCHED_TYPE" and detail == LOGS_ARNLIKE_DETAIL


def documents(shipped_plans) -> Iterator[Document]:
    for stack, plan in shipped_plans.items():
        for resource in plan.resources:
            for (typ, key), kind in POLICY_INPUTS.items():
                if resource.type == typ and isinstance(resource.inputs.get(key), str):
                    yield Document(stack, resource.name, kind, resource.inputs[key])
            if resource.type == "aws:iam/role:Role":
                for inline in resource.inputs.get("inlinePolicies") or []:
                    yield Document(stack, resource.name, "iam", inline["policy"])


def findings(document: Document) -> list[tuple[str, object]]:
    json.loads(document.text)  # a document that is not JSON fails here, not as a parliament finding
    return [(f.issue, f.detail) for f in analyze_policy_string(document.text).findings]


def test_every_shipped_policy_document_passes_parliament(shipped_plans) -> None:
    found = list(documents(shipped_plans))
    # Each kind is present, so the test cannot pass by reading nothing.
    assert {d.kind for d in found} == {"trust", "iam", "key", "topic"}
    problems = [
        (d.stack, d.resource, d.kind, issue, detail)
        for d in found
        for issue, detail in findings(d)
        if not allowed(d.kind, issue, detail)
    ]
    assert problems == []


def test_allow_list_lets_a_real_defect_through() -> None:
    # s3:GetObject on a bucket ARN (not its objects) is a mistake parliament reports; allowed nowhere.
    bad = Document("t", "r", "iam", json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::bucket"}]}))
    issues = [issue for issue, detail in findings(bad) if not allowed(bad.kind, issue, detail)]
    assert issues == ["RESOURCE_MISMATCH"]
    # A wildcard resource outside a key policy is not allowed either.
    star = Document("t", "r", "iam", json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "kms:Decrypt", "Resource": "*"}]}))
    assert [issue for issue, detail in findings(star) if not allowed(star.kind, issue, detail)] == ["RESOURCE_STAR"]


def test_checkpoint_writes_and_bucket_keys_pass_parliament(tmp_path) -> None:
    # No shipped stack names S3 locations: a fork of aws-train-p5 that reads, writes and decrypts.
    cluster = read_cluster("aws-train-p5")
    cluster["identity"] = {
        "s3_read_prefixes": ["s3://corp-datasets/train", "s3://corp-shared"],
        "s3_write_prefixes": ["s3://corp-checkpoints/runs/llm"],
        "s3_kms_keys": ["arn:aws:kms:us-east-1:210987654321:key/1234abcd-12ab-34cd-56ef-1234567890ab"],
    }
    plan = plan_stack(write_stack(tmp_path, "s3", cluster))
    found = [d for d in documents({"s3": plan}) if d.kind == "iam" and '"s3:PutObject"' in d.text]
    assert len(found) == 1 and "kms:ViaService" in found[0].text
    assert [(issue, detail) for issue, detail in findings(found[0]) if not allowed("iam", issue, detail)] == []
