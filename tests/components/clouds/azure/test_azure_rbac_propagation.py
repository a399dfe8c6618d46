"""A create that needs a role waits for Azure's role propagation: the DES's key access before the scale set's
disks, the Lustre identity's key access before the file system, the image builder's gallery role before the
template, and the custom gallery role's own replication before its assignment. Each wait is a pulumiverse-time Sleep
of RBAC_PROPAGATION that depends on the assignment and is re-run when the assignment is replaced; the dependent
create depends on the wait (edges as the engine records them)."""

from __future__ import annotations

from azure_plans import DES, ROLE, TRAIN, VMSS, one, shipped
from conftest import of_type
from test_azure_image_pipeline import GRANT, TEMPLATE, args, build
from test_azure_image_pipeline import ROLE as CUSTOM_ROLE

from components.clouds.azure.storage import RBAC_PROPAGATION
from gpufleet.plan.record import RecordedResource

SLEEP = "time:index/sleep:Sleep"
AMLFS = "azure-native:storagecache:AmlFilesystem"


def _wait_between(assignment: RecordedResource, dependent: RecordedResource,
                  sleeps: list[RecordedResource]) -> RecordedResource:
    """The one wait the dependent create depends on, and which depends on the assignment."""
    (wait,) = [s for s in sleeps if s.urn in dependent.depends_on]
    assert assignment.urn in wait.depends_on
    # Re-run when the assignment is replaced: its id is a trigger.
    assert wait.property_dependencies["triggers"] == (assignment.urn,)
    assert wait.inputs["createDuration"] == RBAC_PROPAGATION == "10m"
    return wait


def test_the_scale_set_waits_for_the_des_key_role_to_propagate() -> None:
    plan = shipped(TRAIN)
    des = one(plan, DES)
    (assignment,) = [r for r in of_type(plan, ROLE) if des.urn in r.property_dependencies.get("principalId", ())]
    scale_set = one(plan, VMSS)
    _wait_between(assignment, scale_set, of_type(plan, SLEEP))
    assert assignment.urn not in scale_set.depends_on  # only through the wait


def test_the_file_system_waits_for_its_identitys_key_role_to_propagate() -> None:
    plan = shipped(TRAIN)
    (fs,) = of_type(plan, AMLFS)
    identity_urn = fs.property_dependencies["identity"][0]
    (assignment,) = [r for r in of_type(plan, ROLE) if r.property_dependencies.get("principalId") == (identity_urn,)]
    _wait_between(assignment, fs, of_type(plan, SLEEP))
    assert assignment.urn not in fs.depends_on


def test_the_image_template_waits_for_the_gallery_role_to_propagate() -> None:
    found = build(args())
    (template,), (grant,) = found[TEMPLATE], found[GRANT]
    _wait_between(grant, template, found[SLEEP])
    assert grant.urn not in template.depends_on


def test_the_custom_gallery_role_is_assigned_only_after_it_has_replicated() -> None:
    found = build(args())
    (role,), (grant,) = found[CUSTOM_ROLE], found[GRANT]
    (wait,) = [s for s in found[SLEEP] if s.urn in grant.depends_on]
    assert role.urn in wait.depends_on
    # A replaced definition (new id) waits again.
    assert wait.property_dependencies["triggers"] == (role.urn,)
    assert wait.inputs["createDuration"] == RBAC_PROPAGATION
