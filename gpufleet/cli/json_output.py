"""The text of a `--format json` document: indented two spaces, keys sorted, ASCII only, as `json.dumps(data,
indent=2, sort_keys=True)` writes it.

CPython's C encoder writes compact JSON only; with an indent, json encodes in pure Python, and a Kubernetes plan
(1.5-2 MB, most of it the operators' CRD schemas) took 40-50 ms to print. orjson writes the same document in 1-4 ms;
what it leaves unescaped (DEL, all beyond ASCII) is escaped here as json does. What orjson refuses (a key that is
not a string, a lone surrogate, an integer beyond 64 bits) and what it would write where json raises (a datetime, a
dataclass) go to json as before. Two differences stay: a float below 1e-4 in magnitude reads `1e-7` where json
writes `1e-07` (the same number to every reader), and a NaN or an infinity reads `null` where json writes `NaN`,
which is not JSON.
"""

from __future__ import annotations

import json
import re
from typing import Any

# What json's ensure_ascii escapes that orjson writes as it is: DEL and everything beyond ASCII.
UNESCAPED = re.compile(r"[^\x00-\x7e]")


def json_text(data: Any) -> str:
    """`data` as one indented JSON document and a newline."""
    import orjson  # here, not at import: orjson's own imports cost a command that prints no JSON ~20 ms

    try:
        text = orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE
                            | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS).decode()
    except TypeError:  # orjson.JSONEncodeError: what only json writes, or what json too refuses, with json's error
        return json.dumps(data, indent=2, sort_keys=True) + "\n"
    return UNESCAPED.sub(lambda found: json.dumps(found.group())[1:-1], text)
