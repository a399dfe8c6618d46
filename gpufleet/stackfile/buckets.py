"""One judgement of the object-storage places a stack grants its nodes: a named bucket, never a pattern.

`S3Uri` / `OssUri` are the stack-field types (s3_read_prefixes, oss_read_prefixes, and any
write prefixes); `wildcard_bucket` is what the identity rules (policies/*/identity.py) ask of a policy's
Resource, so `s3://*` in a stack and `arn:aws:s3:::*/*` in a hand-written policy are refused alike.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from fnmatch import fnmatchcase
from typing import Annotated

from pydantic import AfterValidator

# Bucket names: S3 general purpose buckets take 3-63 lower-case letters, digits, dots and hyphens, starting and
# ending with a letter or digit (S3 User Guide, Bucket naming rules); OSS buckets the same without dots (OSS,
# Bucket naming conventions). Either way no '*' or '?', which IAM and RAM read as wildcards in a Resource.
BUCKET_NAME = {
    "s3": re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]"),
    "oss": re.compile(r"[a-z0-9][a-z0-9-]{1,61}[a-z0-9]"),
}
WILDCARDS = ("*", "?")


def uri_problem(uri: str, scheme: str) -> str | None:
    """Why `uri` is not SCHEME://BUCKET[/PREFIX] with one named bucket, or None."""
    if not uri.startswith(f"{scheme}://"):
        return f"{uri!r} is not {scheme}://BUCKET/PREFIX"
    bucket = uri.removeprefix(f"{scheme}://").partition("/")[0]
    if any(mark in bucket for mark in WILDCARDS):
        return f"{uri!r} names buckets by a pattern ({bucket!r}), which grants every bucket it matches: name the bucket"
    if not BUCKET_NAME[scheme].fullmatch(bucket):
        return f"{uri!r}: {bucket!r} is not a bucket name (3-63 lower-case letters, digits and hyphens)"
    return None


def _checked(scheme: str) -> Callable[[str], str]:
    def check(uri: str) -> str:
        problem = uri_problem(uri, scheme)
        if problem:
            raise ValueError(problem)
        return uri

    return check


# The types of SCHEME://BUCKET/PREFIX stack values, refused with `uri_problem`'s reason.
S3Uri = Annotated[str, AfterValidator(_checked("s3"))]
OssUri = Annotated[str, AfterValidator(_checked("oss"))]


def wildcard_bucket(resource: object, service: str) -> bool:
    """Whether a policy Resource reaches buckets by a pattern: '*', or an ARN of `service` ("s3": arn:PARTITION:
    s3:::BUCKET/KEY; "oss": acs:oss:REGION:ACCOUNT:BUCKET/KEY) whose bucket part has a wildcard."""
    if not isinstance(resource, str):
        return False
    if resource.strip() == "*":
        return True
    parts = resource.split(":", 5 if service == "s3" else 4)
    # The service part may itself be a pattern (arn:aws:*:::*).
    if len(parts) < (6 if service == "s3" else 5) or not fnmatchcase(service, parts[1 if service == "oss" else 2]):
        return False
    bucket = parts[-1].partition("/")[0]
    return any(mark in bucket for mark in WILDCARDS)
