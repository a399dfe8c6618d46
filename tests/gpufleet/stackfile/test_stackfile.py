"""`extends`: maps merge, lists replace, cycles and missing parents refused."""

from __future__ import annotations

from pathlib import Path

import libyaml_files
import pytest

from gpufleet.stackfile import SpecInvalid, load_stack


def write(directory: Path, name: str, config: dict) -> Path:
    path = directory / f"Pulumi.{name}.yaml"
    path.write_text(libyaml_files.dump({"config": config}))
    return path


def test_maps_merge_and_lists_replace(tmp_path: Path) -> None:
    write(tmp_path, "base", {"aws:region": "us-east-1", "gpufleet:cluster": {
        "name": "a", "tags": {"team": "ml", "env": "x"}, "network": {"zones": ["us-east-1a", "us-east-1b"]}}})
    # Provider keys are not inherited (the Pulumi CLI reads the stack's own file): the child repeats them.
    child = write(tmp_path, "child", {"aws:region": "us-east-1", "gpufleet:cluster": {
        "extends": "base", "tags": {"env": "y"}, "network": {"zones": ["us-east-1c"]}}})
    config = load_stack(child)
    cluster = config["gpufleet:cluster"]
    assert cluster["tags"] == {"team": "ml", "env": "y"}
    assert cluster["network"]["zones"] == ["us-east-1c"]
    assert "extends" not in cluster
    assert config["aws:region"] == "us-east-1"


def test_extends_chains(tmp_path: Path) -> None:
    write(tmp_path, "a", {"gpufleet:cluster": {"name": "a", "region": "r1"}})
    write(tmp_path, "b", {"gpufleet:cluster": {"extends": "a", "region": "r2"}})
    c = write(tmp_path, "c", {"gpufleet:cluster": {"extends": "b", "name": "c"}})
    assert load_stack(c)["gpufleet:cluster"] == {"name": "c", "region": "r2"}


def test_cycle_refused(tmp_path: Path) -> None:
    write(tmp_path, "a", {"gpufleet:cluster": {"extends": "b"}})
    b = write(tmp_path, "b", {"gpufleet:cluster": {"extends": "a"}})
    with pytest.raises(SpecInvalid) as caught:
        load_stack(b)
    assert str(caught.value.errors[0]) == "extends: extends forms a cycle: b -> a -> b; break it"


def test_missing_parent_refused(tmp_path: Path) -> None:
    # Provider keys are not inherited (the Pulumi CLI reads the stack's own file): the child repeats them.
    child = write(tmp_path, "child", {"aws:region": "us-east-1", "gpufleet:cluster": {"extends": "nope"}})
    with pytest.raises(SpecInvalid) as caught:
        load_stack(child)
    assert str(caught.value.errors[0]).startswith("extends: no stack 'nope' in ")


def test_invalid_yaml_refused(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text("config: [unclosed\n")
    with pytest.raises(SpecInvalid) as caught:
        load_stack(path)
    assert "not valid YAML" in str(caught.value)
