"""The image bundle carries the install scripts without their whole-line comments (it rides inline in an image
component of 16 KB on Alibaba, 16,000 characters on AWS): every script still parses, shebangs stay."""

from __future__ import annotations

import io
import subprocess
import tarfile

from gpufleet.lock import load_lock
from gpufleet.lock.bundle import pack


def test_packed_scripts_keep_their_shebang_lose_their_comments_and_still_parse(tmp_path) -> None:
    with tarfile.open(fileobj=io.BytesIO(pack(load_lock().profiles["cuda12.8-r580"], "azure"))) as archive:
        scripts = {m.name: archive.extractfile(m).read().decode() for m in archive if m.name.endswith(".sh")}
    assert "images/install/agents.sh" in scripts
    for name, text in scripts.items():
        assert text.startswith("#!"), name
        assert not [line for line in text.splitlines()[1:] if line.lstrip().startswith("#") and
                    not line.startswith("#!")], name
        path = tmp_path / name.replace("/", "_")
        path.write_text(text)
        done = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, check=False)
        assert done.returncode == 0, (name, done.stderr)
