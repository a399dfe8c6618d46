"""libyaml's C parser for every data file the CLI reads, with the tags and values of YAML 1.2.

The pure-Python reader is ~5-10x slower than libyaml (most of a plan's and of `images check`'s YAML time). Here
libyaml only scans and composes; every plain scalar is tagged by ruamel's YAML 1.2 resolver and the tree is rebuilt
as ruamel nodes, so the caller runs the same checks (duplicate keys, aliases, depth) and the same constructor as the
pure reader: the values are its values. PyYAML composes recursively in C, which is safe only because libyaml 0.2.6
stops nesting at 1,000 levels (yaml_set_max_nest_level's default): an older libyaml leaves the pure reader in charge.
"""

from __future__ import annotations

from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml import nodes as ruamel_nodes
from ruamel.yaml.tag import Tag

NESTING_LIMITED_FROM = (0, 2, 6)
# The problem libyaml reports where a document nests past its limit (0.2.6, yaml_maximum_level_reached in parser.c
# and scanner.c): a document nested that deep is refused as nested too deep, without the pure reader re-reading it,
# which on hostile input (200,000 open brackets) took seconds to reach its own refusal.
NESTING_LIMIT_PROBLEM = "exceeded maximum nesting depth"
try:
    from yaml._yaml import get_version
    from yaml.cyaml import CParser, CSafeLoader

    AVAILABLE = get_version() >= NESTING_LIMITED_FROM
except ImportError:  # PyYAML built without libyaml: callers keep the pure reader
    CParser = CSafeLoader = object
    AVAILABLE = False
# PyYAML's safe loader on libyaml's parser: PyYAML's own safe constructor and resolver, so yaml.safe_load's values,
# ~5x faster. For the YAML the project itself renders or vendors (upstream manifests, a node's cloud-config).
SAFE_LOADER: type = CSafeLoader if AVAILABLE else yaml.SafeLoader
# PyYAML's safe dumper on libyaml's emitter where PyYAML has one: the pure emitter's bytes for what the project renders
# (tests compare both: test_bootstrap.py, test_images_stack.py) at a tenth of its time or less.
SAFE_DUMPER: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_KINDS: dict[type, type] = {
    yaml.ScalarNode: ruamel_nodes.ScalarNode,
    yaml.SequenceNode: ruamel_nodes.SequenceNode,
    yaml.MappingNode: ruamel_nodes.MappingNode,
}


def compose(text: str, reader: YAML) -> ruamel_nodes.Node | None:
    """The document of `text` as ruamel nodes tagged by `reader`'s YAML 1.2 resolver (None when empty).

    Raises yaml.YAMLError (PyYAML's) for text libyaml cannot parse.
    """
    parser = _Composer(text, reader)
    try:
        root = parser.get_single_node()
    finally:
        parser.dispose()
    return None if root is None else _RuamelTree().convert(root)


class _Composer(CParser):  # type: ignore[misc,valid-type]
    """libyaml's composer; it asks `resolve` for the tag of every untagged node."""

    def __init__(self, text: str, reader: YAML) -> None:
        super().__init__(text)
        self._resolver = reader.resolver

    # PyYAML's path resolvers (tags by position in the document) are not used: nothing to track.
    def descend_resolver(self, parent: Any, index: Any) -> None:
        pass

    def ascend_resolver(self) -> None:
        pass

    def resolve(self, kind: type, value: Any, implicit: Any) -> str:
        # The suffix of ruamel's Tag is the full tag for implicit tags: no per-scalar URI decoding.
        return self._resolver.resolve(_KINDS[kind], value, implicit).suffix  # type: ignore[no-any-return]


class _RuamelTree:
    """PyYAML nodes -> ruamel nodes; an alias stays one shared node, so alias accounting is unchanged."""

    def __init__(self) -> None:
        self._done: dict[int, ruamel_nodes.Node] = {}
        self._tags: dict[str, Tag] = {}

    def _tag(self, name: str) -> Tag:
        # One Tag per name: ruamel caches the decoded form on the Tag object.
        if name not in self._tags:
            self._tags[name] = Tag(suffix=name)
        return self._tags[name]

    def convert(self, node: Any) -> ruamel_nodes.Node:
        if id(node) in self._done:
            return self._done[id(node)]
        tag, start, end = self._tag(node.tag), node.start_mark, node.end_mark
        converted: ruamel_nodes.Node
        if isinstance(node, yaml.ScalarNode):
            converted = ruamel_nodes.ScalarNode(tag, node.value, start, end, style=node.style)
        elif isinstance(node, yaml.SequenceNode):
            converted = ruamel_nodes.SequenceNode(tag, [], start, end, flow_style=node.flow_style)
        else:
            converted = ruamel_nodes.MappingNode(tag, [], start, end, flow_style=node.flow_style)
        self._done[id(node)] = converted
        if isinstance(node, yaml.SequenceNode):
            converted.value = [self.convert(item) for item in node.value]
        elif isinstance(node, yaml.MappingNode):
            converted.value = [(self.convert(key), self.convert(value)) for key, value in node.value]
        return converted
