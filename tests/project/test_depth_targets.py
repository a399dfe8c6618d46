"""`make test-deep` runs exactly the test files whose budget depends on the depth (they import test_depth), so a
property given a small `make test` budget never loses its full one."""

from __future__ import annotations

import re

from conftest import REPO


def test_make_test_deep_lists_every_file_with_a_depth_budget() -> None:
    target = re.search(r"^test-deep:.*?\n((?:\t.*\n)+)", (REPO / "Makefile").read_text(), re.M)
    assert target, "Makefile has no test-deep target"
    listed = set(re.findall(r"tests/\S+\.py", target.group(1)))
    budgeted = {str(path.relative_to(REPO)) for path in (REPO / "tests").rglob("test_*.py")
                if re.search(r"^from test_depth import", path.read_text(), re.M)}
    assert budgeted and listed == budgeted
    assert "GPUFLEET_TEST_DEPTH=deep" in target.group(1)
