"""Where each field of a stack file is written: its line, so a report can point at it.

Paths use the form of validation errors, from the `config:` map down: `gpufleet:cluster.node_groups[0].size`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ..stackfile import CLUSTER_KEY, IMAGES_KEY
from ..stackfile.read import EXTENDS
from ..yaml_model import compose_yaml

ROOT_KEYS = (CLUSTER_KEY, IMAGES_KEY)


@dataclass(frozen=True)
class StackFileLines:
    """The 1-based line of every key and list item under `config:`, and the text of every scalar."""

    lines: dict[str, int]
    scalars: dict[str, str]

    @property
    def root(self) -> str | None:
        """The gpufleet key this stack file describes (a cluster or an image stack), if it writes one."""
        return next((key for key in ROOT_KEYS if key in self.lines), None)

    def index_of(self, list_path: str, name: str) -> int | None:
        """The index of the item of `list_path` whose `name` is `name`, as this file writes it."""
        index = 0
        while f"{list_path}[{index}]" in self.lines:
            if self.scalars.get(f"{list_path}[{index}].name") == name:
                return index
            index += 1
        return None

    def locate(self, field: str | None) -> tuple[str, int] | None:
        """The line of `field` (a path under the root key), else of the nearest enclosing field this file writes;
        a field the file inherits points at its `extends` line; nothing when the file has no root key."""
        root = self.root
        if root is None:
            return None
        path = f"{root}.{field}" if field else root
        while path != root:
            if path in self.lines:
                return path, self.lines[path]
            path = _parent(path)
        inherited = f"{root}.{EXTENDS}"
        if field and inherited in self.lines:
            return inherited, self.lines[inherited]
        return root, self.lines[root]


def _parent(path: str) -> str:
    cut = max(path.rfind("."), path.rfind("["))
    return path[:cut]


def stack_file_lines(path: Path) -> StackFileLines:
    """Read a stack file (bounded like every stack read) and index its `config:` fields by path."""
    lines: dict[str, int] = {}
    scalars: dict[str, str] = {}

    def visit(node: Node, where: str) -> None:
        if isinstance(node, MappingNode):
            for key, value in node.value:
                name = key.value if isinstance(key, ScalarNode) else f"<{key.tag}>"
                child = f"{where}.{name}" if where else str(name)
                lines.setdefault(child, key.start_mark.line + 1)
                visit(value, child)
        elif isinstance(node, SequenceNode):
            for index, item in enumerate(node.value):
                child = f"{where}[{index}]"
                lines.setdefault(child, item.start_mark.line + 1)
                visit(item, child)
        elif isinstance(node, ScalarNode):
            scalars[where] = node.value

    document = compose_yaml(path)
    if isinstance(document, MappingNode):
        for key, value in document.value:
            if isinstance(key, ScalarNode) and key.value == "config":
                visit(value, "")
    return StackFileLines(lines, scalars)
