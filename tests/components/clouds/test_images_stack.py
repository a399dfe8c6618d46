"""The image-build stack: Image Builder pipeline baking a lock profile from its pinned base image."""

from __future__ import annotations

import base64
import io
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import libyaml_files
import pytest
import yaml
from conftest import SHIPPED_STACKS, shipped_plan

from components.clouds.aws.image_documents import build_documents, component_document
from gpufleet.lock import load_lock
from gpufleet.lock.bundle import BUNDLE_DIR, PARTS_DIR, installer_command, installer_parts, pack
from gpufleet.plan.planner import plan_stack

COMPONENT = "aws:imagebuilder/component:Component"


def test_images_stack_plans_clean() -> None:
    plan = shipped_plan("aws-images")
    assert plan.exit_code == 0, plan.policies["violations"]
    recipe = next(r for r in plan.resources if r.type == "aws:imagebuilder/imageRecipe:ImageRecipe")
    assert recipe.inputs["parentImage"] == load_lock().base_image("aws", "us-east-1")
    components = [r for r in plan.resources if r.type == COMPONENT]
    assert set(recipe.property_dependencies["components"]) == {c.urn for c in components} and len(components) >= 2
    # The recipe runs every component, in the bundle's order: parts first, the installing one last (each
    # component's ARN carries its registered content version).
    ordered = [next(c for c in components if f"/{c.inputs['version']}/" in ref["componentArn"])
               for ref in recipe.inputs["components"]]
    documents = [libyaml_files.load(c.inputs["data"]) for c in ordered]
    assert [d["name"] for d in documents] == [*(f"gpufleet-cuda12.8-r580-part{i}" for i in range(len(ordered) - 1)),
                                              "gpufleet-cuda12.8-r580"]
    commands = documents[-1]["phases"][0]["steps"][0]["inputs"]["commands"][0]
    assert "install.sh --env /opt/gpufleet/src/pins.env --nvswitch yes" in commands
    # Image Builder takes at most 16,000 characters of inline component data: every component.
    assert all(len(c.inputs["data"]) <= 16000 for c in ordered), [len(c.inputs["data"]) for c in ordered]


@pytest.mark.parametrize("cloud", ["aws", "azure", "alicloud"])
def test_parts_rebuild_the_bundle_under_posix_sh_and_refuse_a_missing_part(cloud: str, tmp_path: Path) -> None:
    """The parts run under dash (Ubuntu's /bin/sh) rebuild exactly the packed bundle; one part short fails the
    sha256 check and nothing is unpacked or run."""
    shell = shutil.which("dash") or shutil.which("sh")
    profile = load_lock().profiles["cuda12.8-r580"]
    root = tmp_path / "opt"
    parts = [part.replace("/opt/gpufleet", str(root)).replace(" && bash ", " && echo would run ")
             for part in installer_parts(profile, cloud, True)]
    for part in parts:
        subprocess.run([shell, "-c", part], check=True, capture_output=True)
    src = root / Path(BUNDLE_DIR).name
    with tarfile.open(fileobj=io.BytesIO(pack(profile, cloud)), mode="r:gz") as archive:
        assert (src / "pins.env").read_bytes() == archive.extractfile("pins.env").read()
    assert not (root / Path(PARTS_DIR).name).exists()

    short = tmp_path / "short"
    for part in [p.replace(str(root), str(short)) for p in parts][1:]:
        done = subprocess.run([shell, "-c", part], capture_output=True, text=True)
    assert done.returncode != 0 and "FAILED" in done.stdout + done.stderr
    assert not (short / Path(BUNDLE_DIR).name).exists()


def test_parts_are_one_line_commands_each_within_every_clouds_component_limit() -> None:
    profile = load_lock().profiles["cuda12.8-r580"]
    parts = installer_parts(profile, "aws", True)
    assert all("\n" not in part for part in parts)
    assert all(len(document) <= 16000 for document in build_documents("cuda12.8-r580", parts))


@pytest.mark.parametrize("nvswitch", [True, False])
def test_libyaml_emitter_writes_the_component_documents_of_the_pure_one(monkeypatch, nvswitch: bool) -> None:
    """Image Builder components are immutable: a document written differently would replace every baked one."""
    from components.clouds.aws import image_documents

    lock = load_lock()
    parts = {name: installer_parts(profile, "aws", nvswitch) for name, profile in lock.profiles.items()
             if "aws" in profile.images}
    fast = {name: build_documents(name, part) for name, part in parts.items()}
    pure = type("PureNoAlias", (yaml.SafeDumper,), {"ignore_aliases": image_documents._NoAliasDumper.ignore_aliases})
    monkeypatch.setattr(image_documents, "_NoAliasDumper", pure)
    assert fast and {name: build_documents(name, part) for name, part in parts.items()} == fast


def test_bundle_carries_scripts_node_check_and_pins() -> None:
    profile = load_lock().profiles["cuda12.8-r580"]
    with tarfile.open(fileobj=io.BytesIO(pack(profile, "aws")), mode="r:gz") as archive:
        names = archive.getnames()
        pins = archive.extractfile("pins.env").read().decode()
    assert "images/install/install.sh" in names and "images/nodecheck/__main__.py" in names
    assert not any("__pycache__" in n for n in names)
    assert re.search(r"^DRIVER_VERSION='?580\.126\.16'?$", pins, re.M)


def test_bundle_is_reproducible() -> None:
    profile = load_lock().profiles["cuda12.8-r580"]
    first = installer_command(profile, "aws", True)
    assert first == installer_command(profile, "aws", True)
    payload = "".join(re.findall(r"printf %s '([A-Za-z0-9+/=]+)'", first))
    assert base64.b64decode(payload) == pack(profile, "aws")
    assert "--nvswitch no" in installer_command(profile, "aws", False)


def test_component_document_has_no_anchors_and_parses_back() -> None:
    plan = shipped_plan("aws-images")
    component = next(r for r in plan.resources if r.type == COMPONENT and r.name == "images-install")
    data = component.inputs["data"]
    events = list(yaml.parse(data))
    assert not [e for e in events if isinstance(e, yaml.AliasEvent) or getattr(e, "anchor", None)]
    profile = load_lock().profiles["cuda12.8-r580"]
    command = installer_parts(profile, "aws", True)[-1]
    assert libyaml_files.load(data) == component_document("cuda12.8-r580", command)


def test_the_recipe_starts_from_the_recorded_ami_not_the_parameter(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import datetime, timezone

    from gpufleet.lock import DEFAULT_LOCK_PATH, loader
    from gpufleet.lock.facts import BaseImageFact, ResolvedFacts, base_image_key
    from gpufleet.lock_resolve import write_facts

    lock = tmp_path / "lock.yaml"
    lock.write_text(DEFAULT_LOCK_PATH.read_text())
    parameter = load_lock(lock).base_image("aws", "us-east-1")
    fact = BaseImageFact(source=f"ssm:GetParameter Name={parameter} (test record)", image_id="ami-0a1b2c3d4e5f60718",
                         read_at=datetime(2026, 11, 1, tzinfo=timezone.utc))
    write_facts(lock, ResolvedFacts(base_images={base_image_key("aws", "us-east-1", parameter): fact}))
    monkeypatch.setattr(loader.load_lock, "__defaults__", (lock,))
    plan = plan_stack(SHIPPED_STACKS / "Pulumi.aws-images.yaml", SHIPPED_STACKS)
    recipe = next(r for r in plan.resources if r.type == "aws:imagebuilder/imageRecipe:ImageRecipe")
    assert recipe.inputs["parentImage"] == "ami-0a1b2c3d4e5f60718"
