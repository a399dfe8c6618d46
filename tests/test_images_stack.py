"""The image-build stack: Image Builder pipeline baking a lock profile from its pinned base image."""

from __future__ import annotations

import base64
import io
import re
import tarfile

import yaml
from conftest import SHIPPED_STACKS

from components.clouds.aws.image_pipeline import component_document
from components.lock import load_lock
from components.lock.bundle import installer_command, pack
from components.plan.planner import plan_stack


def test_images_stack_plans_clean() -> None:
    plan = plan_stack(SHIPPED_STACKS / "Pulumi.aws-images.yaml", SHIPPED_STACKS)
    assert plan.exit_code == 0, plan.policies["violations"]
    recipe = next(r for r in plan.resources if r.type == "aws:imagebuilder/imageRecipe:ImageRecipe")
    assert recipe.inputs["parentImage"] == load_lock().base_image("aws", "us-east-1")
    component = next(r for r in plan.resources if r.type == "aws:imagebuilder/component:Component")
    document = yaml.safe_load(component.inputs["data"])
    commands = document["phases"][0]["steps"][0]["inputs"]["commands"][0]
    assert "install.sh --env /opt/gpufleet/src/pins.env --nvswitch yes" in commands
    # Image Builder takes at most 16,000 characters of inline component data.
    assert len(component.inputs["data"]) < 16000


def test_bundle_carries_scripts_node_check_and_pins() -> None:
    profile = load_lock().profiles["cuda12.8-r580"]
    with tarfile.open(fileobj=io.BytesIO(pack(profile, "aws")), mode="r:gz") as archive:
        names = archive.getnames()
        pins = archive.extractfile("pins.env").read().decode()
    assert "images/install/install.sh" in names and "images/nodecheck/__main__.py" in names
    assert not any("__pycache__" in n for n in names)
    assert re.search(r"^DRIVER_VERSION='?580\.95\.05'?$", pins, re.M)


def test_bundle_is_reproducible() -> None:
    profile = load_lock().profiles["cuda12.8-r580"]
    first = installer_command(profile, "aws", True)
    assert first == installer_command(profile, "aws", True)
    payload = re.search(r"echo '([A-Za-z0-9+/=]+)'", first).group(1)
    assert base64.b64decode(payload) == pack(profile, "aws")
    assert "--nvswitch no" in installer_command(profile, "aws", False)


def test_component_document_has_no_anchors_and_parses_back() -> None:
    plan = plan_stack(SHIPPED_STACKS / "Pulumi.aws-images.yaml", SHIPPED_STACKS)
    component = next(r for r in plan.resources if r.type == "aws:imagebuilder/component:Component")
    data = component.inputs["data"]
    events = list(yaml.parse(data))
    assert not [e for e in events if isinstance(e, yaml.AliasEvent) or getattr(e, "anchor", None)]
    profile = load_lock().profiles["cuda12.8-r580"]
    command = installer_command(profile, "aws", True)
    assert yaml.safe_load(data) == component_document("cuda12.8-r580", command)
