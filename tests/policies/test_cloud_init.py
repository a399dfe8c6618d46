"""The files a cloud-config writes, decoded as cloud-init's write_files decodes each encoding."""

from __future__ import annotations

import base64
import gzip

import libyaml_files
import yaml

from policies.cloud_init import cloud_config, written_files
from policies.props import UNKNOWN


def test_each_encoding_decodes_and_a_broken_entry_is_left_out() -> None:
    text = "hello\n"
    packed = gzip.compress(text.encode(), mtime=0)
    entries = [
        {"path": "/plain", "content": text},
        {"path": "/b64", "encoding": "base64", "content": base64.b64encode(text.encode()).decode()},
        {"path": "/gz-b64", "encoding": "gzip+base64", "content": base64.b64encode(packed).decode()},
        {"path": "/gz", "encoding": "gz", "content": packed},
        {"path": "/broken", "encoding": "gz+b64", "content": "not base64 at all"},
    ]
    document = "#cloud-config\n" + libyaml_files.dump({"write_files": entries})
    assert written_files(document) == {"/plain": text, "/b64": text, "/gz-b64": text, "/gz": text}


def test_a_script_writes_nothing_and_unknown_stays_unknown() -> None:
    assert written_files("#!/bin/sh\necho hi\n") == {}
    assert written_files(UNKNOWN) is UNKNOWN


def test_user_data_is_parsed_by_libyaml_with_safe_loads_values(monkeypatch) -> None:
    # Issue 37: the pure-Python reader took ~20 ms of an AWS plan. PyYAML's pure reader starts with yaml.reader's
    # Reader; libyaml's parser never does, so a Reader that refuses to start proves which one ran.
    document = "#cloud-config\n" + libyaml_files.dump({"write_files": [
        {"path": "/etc/x", "content": "on: yes\n", "permissions": "0644"}], "runcmd": [["echo", 1.5, True, None]]})
    expected = libyaml_files.load(document)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the pure-Python YAML reader ran")

    monkeypatch.setattr(yaml.reader.Reader, "__init__", refuse)
    assert cloud_config(document) == expected
