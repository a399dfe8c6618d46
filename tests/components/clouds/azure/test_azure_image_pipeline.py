"""AzureImagePipeline and the azure-images stack under the offline engine: a pinned marketplace source, the
installer, distribution to a gallery image definition, an identity with gallery permissions only; and
`gpufleet images pin` of what the stack outputs."""

from __future__ import annotations

import base64
import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import shipped_plan
from typer.testing import CliRunner

from components.clouds.azure.image_pipeline import GALLERY_ACTIONS, AzureImagePipeline, AzureImagePipelineArgs
from gpufleet.cli import app
from gpufleet.lock import DEFAULT_LOCK_PATH, check_lock, load_lock
from gpufleet.lock.bundle import image_check, installer_command
from gpufleet.plan.engine import run_program
from gpufleet.plan.record import RecordedResource

PARENT = "Canonical:0001-com-ubuntu-server-jammy:22_04-lts-gen2:22.04.202510230"
TEMPLATE = "azure-native:virtualmachineimages:VirtualMachineImageTemplate"
DEFINITION = "azure-native:compute:GalleryImage"
GALLERY = "azure-native:compute:Gallery"
IDENTITY = "azure-native:managedidentity:UserAssignedIdentity"
ROLE = "azure-native:authorization:RoleDefinition"
GRANT = "azure-native:authorization:RoleAssignment"
PROFILE = "cuda12.8-r580"


def args(**changes: object) -> AzureImagePipelineArgs:
    base = dict(
        profile=PROFILE,
        parent_image=PARENT,
        installer_script="#!/bin/bash\nset -euo pipefail\necho install\n",
        regions=["eastus", "southcentralus"],
        vm_size="Standard_D8s_v5",
        gallery_name="gpufleet_images",
    )
    return AzureImagePipelineArgs(**{**base, **changes})


def build(pipeline_args: AzureImagePipelineArgs) -> dict[str, list[RecordedResource]]:
    def program() -> None:
        AzureImagePipeline("img", pipeline_args)

    found: dict[str, list[RecordedResource]] = {}
    for resource in run_program(program, {}, project="gpufleet", stack="test", region="eastus", zones=[]):
        found.setdefault(resource.type, []).append(resource)
    return found


def one(found: dict[str, list[RecordedResource]], typ: str) -> RecordedResource:
    (resource,) = found[typ]
    return resource


def test_template_starts_from_the_pinned_marketplace_version_and_runs_the_installer() -> None:
    found = build(args())
    template = one(found, TEMPLATE)
    assert template.inputs["source"] == {
        "type": "PlatformImage", "publisher": "Canonical", "offer": "0001-com-ubuntu-server-jammy",
        "sku": "22_04-lts-gen2", "version": "22.04.202510230",
    }
    (customizer,) = template.inputs["customize"]
    (command,) = customizer["inline"]
    encoded = re.fullmatch(r"echo '([A-Za-z0-9+/=]+)' \| base64 -d \| sudo bash", command).group(1)
    assert base64.b64decode(encoded).decode() == args().installer_script
    assert template.inputs["autoRun"] == {"state": "Enabled"}
    checks = template.inputs["validate"]["inVMValidations"][0]["inline"]
    # The build VM runs the marketplace kernel: the check reads the boot kernel's modules (test_image_check.py).
    assert checks == [image_check(booted=False)]


def test_distribution_writes_an_explicit_version_of_the_gallery_definition_in_every_region() -> None:
    found = build(args())
    template, definition = one(found, TEMPLATE), one(found, DEFINITION)
    (target,) = template.inputs["distribute"]
    assert target["type"] == "SharedImage"
    assert re.fullmatch(r"/subscriptions/.+/galleries/gpufleet_images/images/gpufleet-cuda12\.8-r580/versions/"
                        r"\d+\.\d+\.\d+", target["galleryImageId"])
    assert definition.urn in template.property_dependencies["distribute"]
    assert [r["name"] for r in target["targetRegions"]] == ["eastus", "southcentralus"]
    assert definition.inputs["hyperVGeneration"] == "V2" and definition.inputs["osState"] == "Generalized"
    assert one(found, GALLERY).urn in definition.property_dependencies["galleryName"]
    # A changed installer is a new version: image versions are immutable.
    other = one(build(args(installer_script="echo other\n")), TEMPLATE)
    assert other.inputs["distribute"][0]["galleryImageId"] != target["galleryImageId"]


def test_identity_holds_only_the_gallery_permissions_on_the_gallery() -> None:
    found = build(args())
    template, identity, role, grant = (one(found, t) for t in (TEMPLATE, IDENTITY, ROLE, GRANT))
    assert template.inputs["identity"]["type"] == "UserAssigned"
    assert identity.urn in template.property_dependencies["identity"]
    assert role.inputs["permissions"] == [{"actions": list(GALLERY_ACTIONS)}]
    assert not any("*" in action for action in GALLERY_ACTIONS)
    # Assigned on the gallery itself, to the template's identity, with that custom role; never the subscription.
    assert grant.property_dependencies["scope"] == (one(found, GALLERY).urn,)
    assert grant.property_dependencies["principalId"] == (identity.urn,)
    assert grant.property_dependencies["roleDefinitionId"] == (role.urn,)
    assert "/resourceGroups/" in grant.inputs["scope"] and grant.inputs["principalType"] == "ServicePrincipal"
    assert "/resourceGroups/" in role.inputs["scope"] and role.inputs["assignableScopes"] == [role.inputs["scope"]]
    # The build starts only once the identity may write (after the role's propagation wait:
    # tests/components/clouds/azure/test_azure_rbac_propagation.py).


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"parent_image": "Canonical:0001-com-ubuntu-server-jammy:22_04-lts-gen2:latest"}, "parent_image:"),
        ({"regions": ["us-east-1"]}, "regions: 'us-east-1' is not an Azure region name"),
        ({"vm_size": "g5.2xlarge"}, "vm_size: 'g5.2xlarge' is not an Azure VM size"),
        ({"gallery_name": "my-gallery"}, "gallery_name:"),
    ],
)
def test_args_refuse_unpinned_or_foreign_values(change: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        args(**change)


def test_shipped_stack_bakes_the_lock_profile_from_the_lock_base_image() -> None:
    plan = shipped_plan("azure-images")
    assert plan.exit_code == 0, plan.policies["violations"]
    template = next(r for r in plan.resources if r.type == TEMPLATE)
    lock = load_lock()
    assert ":".join(template.inputs["source"][k] for k in ("publisher", "offer", "sku", "version")) == (
        lock.base_image("azure", "eastus")
    )
    command = base64.b64decode(template.inputs["customize"][0]["inline"][0].split("'")[1]).decode()
    assert command == installer_command(lock.profiles[PROFILE], "azure", True)


# What `pulumi stack output --json --stack azure-images` prints after a bake and a refresh.
VERSION = ("/subscriptions/2c4f5b1e-7d3a-4e8b-9f10-3a5b6c7d8e9f/resourceGroups/images-rg1a2b3c4d/providers/"
           "Microsoft.Compute/galleries/gpufleet_images/images/gpufleet-cuda12.8-r580/versions/1.0.64145676")
OUTPUTS = {
    "build_status": "Succeeded",
    "cloud": "azure",
    "gallery_image_id": VERSION.rsplit("/versions/", 1)[0],
    "images": {"eastus": VERSION, "southcentralus": VERSION},
    "parent_image": PARENT,
    "profile": PROFILE,
    "project": "gpufleet",
    "stack": "azure-images",
    "template_id": "/subscriptions/2c4f5b1e-7d3a-4e8b-9f10-3a5b6c7d8e9f/resourceGroups/images-rg1a2b3c4d/providers/"
                   "Microsoft.VirtualMachineImages/imageTemplates/images-template5e6f7a8b",
}


def pin_outputs(tmp_path: Path, outputs: dict) -> tuple[object, Path]:
    lock = tmp_path / "lock.yaml"
    shutil.copyfile(DEFAULT_LOCK_PATH, lock)
    (tmp_path / "outputs.json").write_text(json.dumps(outputs))
    result = CliRunner().invoke(app, ["images", "pin", "--stack", "azure-images", "--lock", str(lock),
                                      "--outputs", str(tmp_path / "outputs.json")])
    return result, lock


def test_pin_writes_the_gallery_version_of_each_region(tmp_path: Path) -> None:
    result, lock_path = pin_outputs(tmp_path, OUTPUTS)
    assert result.exit_code == 0, result.output
    lock = load_lock(lock_path)
    assert lock.image_id(PROFILE, "azure", "eastus") == VERSION
    assert lock.image_entry(PROFILE, "azure", "southcentralus").status == "baked"
    assert lock.image_entry("cuda13.0-r580", "azure", "eastus").status == "unbaked"
    assert check_lock(lock, lock.driver_branches.branches["r580"].eol) == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"build_status": "Running"}, "outputs.build_status: the bake is 'Running', not 'Succeeded'"),
        ({"images": {"eastus": "ami-0123456789abcdef0"}}, "outputs.images: eastus: 'ami-0123456789abcdef0' is not"),
        ({"images": {"westeurope": VERSION}}, "outputs.images.westeurope: profile 'cuda12.8-r580' has no azure"),
        ({"images": {"eastus": VERSION.replace("1.0.64145676", "latest")}}, "outputs.images: eastus:"),
        ({"build_status": None}, "outputs.build_status: the bake is None, not 'Succeeded'"),
        # Only versions of the stack's own gallery image: not another gallery's, not a marketplace image.
        ({"images": {"eastus": VERSION.replace("/galleries/", "/galleries/other")}},
         "outputs.images.eastus: '/subscriptions/"),
        ({"images": {"eastus": "Canonical:0001-com-ubuntu-server-jammy:22_04-lts-gen2:22.04.202510230"}},
         "outputs.images.eastus: 'Canonical:"),
        ({"images": {"eastus": "Canonic\u0430l:0001-com-ubuntu-server-jammy:22_04-lts-gen2:22.04.202510230"}},
         "outputs.images: eastus:"),
        ({"images": {"eastus": VERSION + "\n"}}, "outputs.images: eastus:"),
        ({"stack": "azure-images-2"}, "outputs.stack: the outputs are of stack 'azure-images-2'"),
    ],
)
def test_pin_refuses_unfinished_or_malformed_azure_outputs(tmp_path: Path, change: dict, message: str) -> None:
    result, lock_path = pin_outputs(tmp_path, {**OUTPUTS, **change})
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert lock_path.read_text() == DEFAULT_LOCK_PATH.read_text()
