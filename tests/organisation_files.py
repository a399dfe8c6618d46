"""An organisation policy file written for a test, read by plans instead of the shipped one."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from gpufleet import organisation_file as organisation_module
from gpufleet.pack_config import floor as policy_floor


@contextmanager
def organisation_file(tmp_path: Path, text: str) -> Iterator[None]:
    path = tmp_path / "organisation.yaml"
    path.write_text(text)
    with pytest.MonkeyPatch.context() as patch:
        policy_floor.organisation.cache_clear()
        organisation_module.granted_key_accounts_in.cache_clear()
        patch.setattr(organisation_module, "ORGANISATION_FILE", path)
        try:
            yield
        finally:
            policy_floor.organisation.cache_clear()
            organisation_module.granted_key_accounts_in.cache_clear()
