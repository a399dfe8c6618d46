"""No wildcard data access: a bucket named by a pattern is refused by the spec (every prefix field) and by the
identity rules, which judge a statement's Resource as well as its Action."""

from __future__ import annotations

import copy
import json

from aws_rule_args import validate
from conftest import read_cluster
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.resolve import resolve_cluster
from gpufleet.stackfile import SpecInvalid

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
RAM_POLICY = "alicloud:ram/policy:Policy"
IAM_POLICY = "aws:iam/policy:Policy"

# A bucket part with at least one wildcard among name characters, and any prefix after it.
patterns = st.tuples(
    st.text(alphabet="abc0-.", max_size=6), st.sampled_from(["*", "?"]), st.text(alphabet="abc0-*?", max_size=6)
).map("".join)
prefixes = st.text(alphabet="abc/-_*", max_size=12)
names = st.from_regex(r"[a-z0-9][a-z0-9-]{1,20}[a-z0-9]", fullmatch=True)


def _identity_errors(stack: str, field: str, uris: list[str]) -> list[str]:
    raw = copy.deepcopy(read_cluster(stack))
    raw.setdefault("identity", {})[field] = uris
    try:
        resolve_cluster(raw)
    except SpecInvalid as caught:
        return [str(e) for e in caught.errors if str(e).startswith(f"identity.{field}")]
    return []


def _iam(action: str, resource: str) -> dict[str, str]:
    document = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": [action], "Resource": resource}]}
    return {"policy": json.dumps(document)}


def _ram(action: str, resource: str) -> dict[str, str]:
    document = {"Version": "1", "Statement": [{"Effect": "Allow", "Action": [action], "Resource": [resource]}]}
    return {"policyDocument": json.dumps(document)}


@SETTINGS
@given(patterns, prefixes)
def test_spec_refuses_a_bucket_pattern(bucket: str, prefix: str) -> None:
    assert _identity_errors("aws-train-p5", "s3_read_prefixes", [f"s3://{bucket}/{prefix}"])
    assert _identity_errors("alicloud-train-ebmgn8v", "oss_read_prefixes", [f"oss://{bucket}/{prefix}"])


@SETTINGS
@given(patterns, prefixes, st.sampled_from(["s3:GetObject", "s3:ListBucket", "s3:Get*", "*"]))
def test_iam_rule_judges_the_resource(bucket: str, prefix: str, action: str) -> None:
    for resource in (f"arn:aws:s3:::{bucket}/{prefix}", f"arn:aws:s3:::{bucket}", "*"):
        assert validate("aws-iam-no-wildcard-bucket", IAM_POLICY, _iam(action, resource)), resource


@SETTINGS
@given(patterns, prefixes, st.sampled_from(["oss:GetObject", "oss:ListObjects", "*"]))
def test_ram_rule_judges_the_resource(bucket: str, prefix: str, action: str) -> None:
    for resource in (f"acs:oss:*:*:{bucket}/{prefix}", f"acs:oss:*:*:{bucket}", "*"):
        assert validate("alicloud-ram-no-wildcard-bucket", RAM_POLICY, _ram(action, resource)), resource


@SETTINGS
@given(names, st.text(alphabet="abc/-_", max_size=12))
def test_a_named_bucket_passes(bucket: str, prefix: str) -> None:
    assert _identity_errors("aws-train-p5", "s3_read_prefixes", [f"s3://{bucket}/{prefix}"]) == []
    assert _identity_errors("alicloud-train-ebmgn8v", "oss_read_prefixes", [f"oss://{bucket}/{prefix}"]) == []
    assert validate("aws-iam-no-wildcard-bucket", IAM_POLICY, _iam("s3:GetObject", f"arn:aws:s3:::{bucket}/*")) == []
    assert validate("alicloud-ram-no-wildcard-bucket", RAM_POLICY,
                    _ram("oss:GetObject", f"acs:oss:*:*:{bucket}/*")) == []


def test_the_issue_spelling_names_the_field() -> None:
    (error,) = _identity_errors("aws-train-p5", "s3_read_prefixes", ["s3://*"])
    assert error.startswith("identity.s3_read_prefixes[0]") and "grants every bucket it matches" in error
