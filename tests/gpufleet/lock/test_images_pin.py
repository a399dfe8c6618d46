"""`gpufleet images pin`: a bake's stack outputs become lock ids, and nothing else in the lock changes."""

from __future__ import annotations

import difflib
import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.lock import DEFAULT_LOCK_PATH, check_lock, load_lock

runner = CliRunner()
PROFILE = "cuda12.8-r580"
# What `pulumi stack output --json --stack aws-images` prints after a bake (components/clouds/aws/images_stack.py).
OUTPUTS = {
    "amis": {"us-east-1": "ami-0123456789abcdef0", "us-west-2": "ami-0fedcba9876543210"},
    "cloud": "aws",
    "image_arn": "arn:aws:imagebuilder:us-east-1:111122223333:image/gpufleet-cuda12-8-r580/1.0.42/1",
    "kms_key_arn": "arn:aws:kms:us-east-1:111122223333:key/mrk-1234abcd12ab34cd56ef1234567890ab",
    # The AMI the recipe started from: the one `lock resolve --only base` recorded behind the SSM parameter.
    "parent_image": "ami-0a1b2c3d4e5f60718",
    "pipeline_arn": "arn:aws:imagebuilder:us-east-1:111122223333:image-pipeline/images-pipeline",
    "profile": PROFILE,
    "recipe_arn": "arn:aws:imagebuilder:us-east-1:111122223333:image-recipe/images-recipe/1.0.42",
    "project": "gpufleet",
    "stack": "aws-images",
}


@pytest.fixture
def lock_file(tmp_path: Path) -> Path:
    path = tmp_path / "lock.yaml"
    shutil.copyfile(DEFAULT_LOCK_PATH, path)
    return path


def pin(lock_file: Path, *args: str):
    return runner.invoke(app, ["images", "pin", "--stack", "aws-images", "--lock", str(lock_file), *args])


def write_outputs(tmp_path: Path, outputs: object) -> str:
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    return str(path)


def test_sample_outputs_rewrite_only_the_ids(tmp_path: Path, lock_file: Path) -> None:
    before = lock_file.read_text()
    result = pin(lock_file, "--outputs", write_outputs(tmp_path, OUTPUTS))
    assert result.exit_code == 0, result.output
    assert "pinned cuda12.8-r580 aws/us-east-1: ami-0123456789abcdef0 (was unbaked)" in result.output
    after = lock_file.read_text()
    changed = [line[0] + line[2:] for line in difflib.ndiff(before.splitlines(), after.splitlines())
               if line[:1] in "+-"]
    assert sorted(changed) == [
        "+        us-east-1: {id: ami-0123456789abcdef0, status: baked, stack: aws-images, base_image: "
        + OUTPUTS["parent_image"] + "}",
        "+        us-west-2: {id: ami-0fedcba9876543210, status: baked, stack: aws-images, base_image: "
        + OUTPUTS["parent_image"] + "}",
        "-        us-east-1: {id: null, status: unbaked, stack: aws-images}",
        "-        us-west-2: {id: null, status: unbaked, stack: aws-images}",
    ]
    lock = load_lock(lock_file)
    assert lock.image_id(PROFILE, "aws", "us-east-1") == "ami-0123456789abcdef0"
    assert lock.image_entry("cuda13.0-r580", "aws", "us-east-1").status == "unbaked"
    # Which base each bake started from is recorded beside its id.
    assert lock.image_entry(PROFILE, "aws", "us-east-1").base_image == OUTPUTS["parent_image"]
    assert check_lock(lock, lock.driver_branches.branches["r580"].eol) == []


def test_pin_refuses_a_lock_entry_another_stack_bakes(tmp_path: Path, lock_file: Path) -> None:
    lock_file.write_text(lock_file.read_text().replace(
        "us-east-1: {id: null, status: unbaked, stack: aws-images}",
        "us-east-1: {id: null, status: unbaked, stack: aws-images-eu}", 1))
    before = lock_file.read_text()
    result = pin(lock_file, "--outputs", write_outputs(tmp_path, OUTPUTS))
    assert result.exit_code == 2, result.output
    assert "baked by stack 'aws-images-eu', not 'aws-images'" in " ".join(result.output.split())
    assert lock_file.read_text() == before


def test_pin_runs_pulumi_stack_output_when_no_file_is_given(tmp_path: Path, lock_file: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "printed.json").write_text(json.dumps(OUTPUTS))
    fake = bin_dir / "pulumi"
    fake.write_text(f'#!/bin/sh\necho "$@" > "{tmp_path}/args"\ncat "{tmp_path}/printed.json"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    result = pin(lock_file)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "args").read_text().split() == ["stack", "output", "--json", "--stack", "aws-images"]
    assert load_lock(lock_file).image_id(PROFILE, "aws", "us-west-2") == "ami-0fedcba9876543210"


def test_missing_pulumi_cli_exits_2_with_the_way_out(tmp_path: Path, lock_file: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    result = pin(lock_file)
    assert result.exit_code == 2
    assert "the Pulumi CLI is not on PATH" in result.output and "--outputs" in result.output


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"amis": {"us-east-1": "ami-0000"}}, "outputs.amis: us-east-1: 'ami-0000' is not an AMI id"),
        ({"amis": {"us-east-1": "ami-00000000000000000"}}, "outputs.amis: us-east-1: 'ami-00000000000000000'"),
        ({"amis": {"US East": "ami-0123456789abcdef0"}}, "outputs.amis: 'US East' is not an AWS region name"),
        ({"amis": {}}, "outputs.amis: Dictionary should have at least 1 item"),
        ({"amis": {**OUTPUTS["amis"], "eu-west-1": "ami-0123456789abcdef0"}},
         "outputs.amis.eu-west-1: profile 'cuda12.8-r580' has no"),
        ({"cloud": "gcp"}, "outputs.cloud: Input should be 'aws', 'azure' or 'alicloud'"),
        ({"cloud": "azure"}, "outputs.amis: 'us-east-1' is not an Azure region name"),
        ({"profile": "cuda12.8-r570"}, "outputs.profile: 'cuda12.8-r570' is not a profile of lock.yaml"),
        ({"amis": None}, "outputs.amis: Input should be a valid dictionary"),
        # Only what the named bake made: its stack, its build, anchored ASCII ids.
        ({"stack": "other-images"}, "outputs.stack: the outputs are of stack 'other-images', not --stack 'aws-images'"),
        ({"stack": None}, "outputs.stack: the outputs are of stack None"),
        ({"image_arn": None}, "outputs.image_arn: None is not an Image Builder image build version ARN"),
        ({"image_arn": OUTPUTS["image_arn"] + "\n"}, "outputs.image_arn:"),
        ({"image_arn": OUTPUTS["image_arn"].replace("us-east-1", "eu-west-1")},
         "outputs.images: no AMI in the build region eu-west-1"),
        ({"amis": {"us-east-1": "ami-0123456789abcdef0\n"}}, "outputs.amis: us-east-1: 'ami-0123456789abcdef0\\n'"),
        ({"amis": {"us-east-1": "ami-0123456789abcdef\u0660"}}, "outputs.amis: us-east-1:"),
        # A parameter names whichever AMI is current on the day it is read: the lock records the AMI itself.
        ({"parent_image": "ssm:/aws/service/canonical/ubuntu/server/22.04/stable/current/amd64/hvm/ebs-gp2/ami-id"},
         "outputs.parent_image: 'ssm:/aws/service/canonical/ubuntu/server/22.04/stable/current/amd64/hvm/ebs-gp2/"
         "ami-id' is not the AMI the bake started from"),
        ({"parent_image": None}, "outputs.parent_image: None is not the AMI the bake started from"),
        # An unfinished Azure bake: outputs refresh only when the program runs again (pulumi-azure-native #3522).
        ({"cloud": "azure", "amis": {"eastus": "Canonical:ubuntu:22_04:22.04.202510230"}, "build_status": "Running"},
         "outputs.build_status: the bake is 'Running', not 'Succeeded', so its images are not all made: wait for "
         "it, run `pulumi up --refresh --stack aws-images`, then pin again"),
    ],
)
def test_bad_outputs_exit_2_naming_the_field(tmp_path: Path, lock_file: Path, change: dict, message: str) -> None:
    before = lock_file.read_text()
    result = pin(lock_file, "--outputs", write_outputs(tmp_path, {**OUTPUTS, **change}))
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert lock_file.read_text() == before


def test_unreadable_or_non_json_outputs_exit_2(tmp_path: Path, lock_file: Path) -> None:
    result = pin(lock_file, "--outputs", str(tmp_path / "absent.json"))
    output = " ".join(result.output.split())
    assert result.exit_code == 2 and output.startswith("error: --outputs:") and "is not a readable file" in output
    (tmp_path / "text.json").write_text("Current stack outputs (2):")
    result = pin(lock_file, "--outputs", str(tmp_path / "text.json"))
    assert result.exit_code == 2 and "text.json: not JSON" in " ".join(result.output.split())
