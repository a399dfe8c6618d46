"""JSON Schema of a whole stack file (stacks/Pulumi.<stack>.yaml), for editors (yaml-language-server) and CI.

The top level holds Pulumi's stack settings keys (https://www.pulumi.com/docs/iac/concepts/projects/stack-settings-file/).
Under `config` every key is `<namespace>:<key>`, as the Pulumi CLI requires: each cloud's provider region key,
any other provider setting, and gpufleet's own keys, described by the same models the program validates with.

A section that `extends` another stack holds only what it overrides, so it gets the same models with nothing
required: field names and value types are still checked, and `gpufleet plan` validates the merged stack in full.
"""

from __future__ import annotations

from typing import Any

from ..clouds.lookup import backend
from ..clouds.registry import CLOUDS
from ..plan.policy_catalog import config_json_schema
from ..resolve import cluster_json_schema
from . import CLUSTER_KEY, IMAGES_KEY, POLICY_KEY
from .image_stack import images_json_schema
from .read import EXTENDS

DEFS = "#/$defs/"
EXTENDING = "extending."
# Keys of the `gpufleet` namespace other than the three sections: the prompts of the Pulumi.yaml template
# that a `pulumi new` stack starts from (gpufleet/program.py from_template).
TEMPLATE_KEYS = {
    "gpufleet:template": {"type": "string", "description": "stack in stacks/ a `pulumi new` stack starts from"},
    "gpufleet:cloud": {"enum": list(CLOUDS), "description": "cloud of a `pulumi new` stack"},
    "gpufleet:region": {"type": "string", "description": "region of a `pulumi new` stack"},
}
SECTION_DESCRIPTIONS = {
    "cluster": "a GPU cluster: its cloud, region, network, node groups, storage, budget and monitoring",
    "images": "a stack that bakes image profiles (images/lock.yaml) instead of running a cluster",
}
EXTENDS_FIELD = {
    "type": "string", "minLength": 1,
    "description": "another stack in stacks/ to inherit; maps merge, lists replace, this file sets only overrides",
}


def _relocated(schema: dict[str, Any], prefix: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The schema without its $defs, and those $defs renamed under `prefix`, every reference rewritten (`$ref`
    and a discriminator's mapping): several sections share one document, whose $defs live at its root."""

    def rewrite(node: Any) -> Any:
        if isinstance(node, dict):
            return {key: rewrite(value) for key, value in node.items()}
        if isinstance(node, list):
            return [rewrite(value) for value in node]
        if isinstance(node, str) and node.startswith(DEFS):
            return DEFS + prefix + node[len(DEFS):]
        return node

    schema = rewrite(schema)
    defs = schema.pop("$defs", {})
    return schema, {prefix + name: value for name, value in defs.items()}


class _Extending:
    """The schema of a section as a file that `extends` another may write it. Maps merge, so no field of a map
    is required (and a discriminated `oneOf` becomes `anyOf`: `cloud` may be inherited, and without it several
    branches match). Lists replace, so a list is written whole: its items keep the full schema."""

    def __init__(self, defs: dict[str, Any]) -> None:
        self.defs = defs
        self.made: dict[str, Any] = {}

    def ref(self, ref: str) -> str:
        name = EXTENDING + ref[len(DEFS):]
        if name not in self.made:
            self.made[name] = {}  # taken before the walk: a model that refers to itself ends here
            self.made[name] = self.schema(self.defs[ref[len(DEFS):]])
        return DEFS + name

    def schema(self, node: Any) -> Any:
        if isinstance(node, list):
            return [self.schema(value) for value in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("required", "discriminator"):
                continue
            if key == "if":  # a condition, not a requirement of the file: kept as written
                out[key] = value
                continue
            if key in ("properties", "patternProperties"):
                out[key] = {field: self.schema(spec) for field, spec in value.items()}
            elif key in ("items", "prefixItems"):
                out[key] = value
            elif key == "$ref":
                out[key] = self.ref(value)
            else:
                out["anyOf" if key == "oneOf" else key] = self.schema(value)
        return out


def _section(name: str, schema: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A gpufleet section: its model, or, when the section names `extends`, the model as an extending file may
    write it, with `extends` allowed. Returns the section's schema and the $defs it adds."""
    full, defs = _relocated(schema, f"{name}.")
    extending = _Extending(defs)
    partial = extending.schema(full)
    # The models the section itself is (one per cloud, or one) take the `extends` field.
    refs = [*partial.get("anyOf", []), *(rule["then"] for rule in partial.get("allOf", []) if "then" in rule)]
    branches = [extending.made[ref["$ref"][len(DEFS):]] for ref in refs if "$ref" in ref]
    for model in branches or [partial]:
        model["properties"][EXTENDS] = EXTENDS_FIELD
    defs.update(extending.made)
    defs[name], defs[EXTENDING + name] = full, partial
    section = {
        "description": SECTION_DESCRIPTIONS[name],
        "if": {"type": "object", "required": [EXTENDS]},
        "then": {"$ref": DEFS + EXTENDING + name},
        "else": {"$ref": DEFS + name},
    }
    return section, defs


def stack_file_json_schema() -> dict[str, Any]:
    """JSON Schema (2020-12) of a stack file: Pulumi's top-level keys and the `config` gpufleet reads."""
    defs: dict[str, Any] = {}
    sections = {}
    for key, name, schema in ((CLUSTER_KEY, "cluster", cluster_json_schema()),
                              (IMAGES_KEY, "images", images_json_schema())):
        sections[key], added = _section(name, schema)
        defs.update(added)
    from policies.registry import RULES

    policy = {
        **config_json_schema(RULES),
        "title": POLICY_KEY,
        "description": "pack config for this stack (the --policy-pack-config shape): a level per policy or its "
        "settings; may tighten the organisation floor, lower it only through a listed exception",
    }
    regions = {
        backend(cloud).region_key: {
            "type": "string", "description": f"{cloud} provider region; equal to the gpufleet section's region",
        }
        for cloud in CLOUDS
    }
    config = {
        "type": "object",
        "description": "stack configuration: `<namespace>:<key>` (a cluster, or an image build)",
        "properties": {**regions, **TEMPLATE_KEYS, **sections, POLICY_KEY: policy},
        # Any other provider's or namespace's setting, as Pulumi allows; an unknown gpufleet key is a typo.
        "patternProperties": {"^(?!gpufleet:)[^:]+:.+$": {}},
        "additionalProperties": False,
        "anyOf": [{"required": [CLUSTER_KEY]}, {"required": [IMAGES_KEY]}],
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "gpufleet stack file (stacks/Pulumi.<stack>.yaml)",
        "type": "object",
        "additionalProperties": False,
        "required": ["config"],
        "properties": {
            "config": config,
            "secretsprovider": {"type": "string", "description": "secrets provider of the stack's secure values"},
            "encryptedkey": {"type": "string", "description": "KMS-encrypted data key (cloud secrets providers)"},
            "encryptionsalt": {"type": "string", "description": "encryption salt (passphrase secrets provider)"},
            "environment": {
                "description": "Pulumi ESC environments: a list to import, or an environment definition",
                "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "object"}],
            },
        },
        "$defs": defs,
    }
