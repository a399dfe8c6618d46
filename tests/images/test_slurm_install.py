"""slurm.sh under the real apt-get, dpkg and gpg (tests/apt_sandbox.py): SchedMD's packages and nvidia-container-cli
come only from repositories signed by the keys the lock pins, every package installs at exactly the lock's version
although a newer one is offered, and is held; enroot's .debs and pyxis's source are used only when their sha256 is
the lock's. The one stand-in is `make`: compiling pyxis needs Slurm 25.11's headers, which only the bake has, so the
stub writes what pyxis's `make install` writes (NVIDIA/pyxis Makefile @1075199: spank_pyxis.so under
$(libdir)/slurm and pyxis.conf holding `required $(libdir)/slurm/spank_pyxis.so`)."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

from apt_sandbox import AptSandbox, build_deb, flat_repository, sha256, signing_key, stub_dir
from conftest import REPO

from gpufleet.lock import load_lock, render_install_env

SCRIPT = REPO / "images" / "install" / "slurm.sh"
PROFILE = load_lock().profiles["cuda12.8-r580"]
PINS = PROFILE.slurm
PYXIS_INSTALL = ('for a; do [[ $a == DESTDIR=* ]] && DESTDIR=${a#DESTDIR=}; done; '
                 'mkdir -p "$DESTDIR/usr/local/lib/slurm" "$DESTDIR/usr/local/share/pyxis"; '
                 ': > "$DESTDIR/usr/local/lib/slurm/spank_pyxis.so"; '
                 'echo "required /usr/local/lib/slurm/spank_pyxis.so" > "$DESTDIR/usr/local/share/pyxis/pyxis.conf"')


def _signed_repository(tmp_path: Path, name: str, packages: dict[str, str], signer: list[str],
                       files: dict[str, dict[str, str]] | None = None) -> Path:
    """A flat repository holding each package at its pinned version and a newer one, InRelease signed by `signer`."""
    repo = flat_repository(tmp_path / name, {p: [v, "99.0-1"] for p, v in packages.items()}, name, files=files)
    subprocess.run([*signer, "--clearsign", "-o", str(repo / "InRelease"), str(repo / "Release")], check=True)
    return repo


def _exported(gpg: list[str], path: Path) -> Path:
    path.write_text(subprocess.run([*gpg, "--armor", "--export"], check=True, capture_output=True, text=True).stdout)
    return path


def _world(tmp_path: Path, enroot_sha256: bool = True, slurm_signer: str = "microsoft") -> tuple[AptSandbox, Path]:
    """The sandbox with the image's own Ubuntu archive (munge, and munge's key made at install, as the package does)
    and gcc/make; SchedMD's and NVIDIA's signed repositories; enroot's .debs and a pyxis source tarball on disk; the
    pins pointing there (enroot's sha256 left out unless `enroot_sha256`, as the shipped lock leaves it)."""
    assert PINS is not None
    box = AptSandbox(tmp_path / "root")
    ubuntu = flat_repository(tmp_path / "ubuntu", {**{p: [v, "99.0-1"] for p, v in PINS.munge.apt.items()},
                                                   "gcc": ["1"], "make": ["1"]}, "Ubuntu",
                             files={"munge": {"etc/munge/munge.key": "made at install"}})
    (box.root / "etc/apt/sources.list").write_text(f"deb [trusted=yes] file://{ubuntu} /\n")
    microsoft, microsoft_fpr = signing_key("microsoft")
    signer = microsoft if slurm_signer == "microsoft" else signing_key(slurm_signer)[0]
    slurm = _signed_repository(tmp_path, "slurm", PINS.packages.apt, signer)
    nvidia, nvidia_fpr = signing_key("nvidia")
    cli = _signed_repository(tmp_path, "libnvidia-container", PINS.container_cli.apt, nvidia)
    debs = tmp_path / "debs"
    enroot = build_deb(debs, "enroot", f"{PINS.enroot.version}-1")
    caps = build_deb(debs, "enroot+caps", f"{PINS.enroot.version}-1", depends=f"enroot (= {PINS.enroot.version}-1)")
    pyxis = tmp_path / "pyxis.tar.gz"
    with tarfile.open(pyxis, "w:gz") as archive:
        data = b"# pyxis source stand-in\n"
        info = tarfile.TarInfo(f"pyxis-{PINS.pyxis.version}/Makefile")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    pins = render_install_env(PROFILE, "aws") + (
        f"SLURM_PACKAGES_SOURCE='file://{slurm} /'\n"
        f"SLURM_PACKAGES_KEY_URL=file://{_exported(microsoft, tmp_path / 'microsoft.asc')}\n"
        f"SLURM_PACKAGES_KEY_FINGERPRINT={microsoft_fpr}\n"
        f"SLURM_CONTAINER_CLI_SOURCE='file://{cli} /'\n"
        f"SLURM_CONTAINER_CLI_KEY_URL=file://{_exported(nvidia, tmp_path / 'gpgkey')}\n"
        f"SLURM_CONTAINER_CLI_KEY_FINGERPRINT={nvidia_fpr}\n"
        f"ENROOT_URL=file://{enroot}\nENROOT_CAPS_URL=file://{caps}\n"
        f"PYXIS_URL=file://{pyxis}\nPYXIS_SHA256={sha256(pyxis)}\n")
    if enroot_sha256:
        pins += f"ENROOT_SHA256={sha256(enroot)}\nENROOT_CAPS_SHA256={sha256(caps)}\n"
    env_file = tmp_path / "pins.env"
    env_file.write_text(pins)
    return box, env_file


def _run(box: AptSandbox, env_file: Path) -> subprocess.CompletedProcess[str]:
    log = box.root.parent / "systemctl.log"
    stubs = stub_dir(box.root.parent / "stubs", (), {"systemctl": f'echo "systemctl $*" >> "{log}"',
                                                      "make": PYXIS_INSTALL})
    return subprocess.run(["bash", "-c", f'set -a; . "{env_file}"; set +a; exec bash "{SCRIPT}"'],
                          env=box.env(f"{stubs}:/usr/sbin:/usr/bin:/sbin:/bin"), capture_output=True, text=True,
                          timeout=300, check=False)


def test_slurm_munge_and_enroot_install_at_the_lock_held_with_services_off_and_no_munge_key(tmp_path):
    assert PINS is not None
    box, env_file = _world(tmp_path)
    done = _run(box, env_file)
    assert done.returncode == 0, done.stderr
    installed = box.installed()
    expected = {**PINS.packages.apt, **PINS.munge.apt, **PINS.container_cli.apt,
                "enroot": f"{PINS.enroot.version}-1", "enroot+caps": f"{PINS.enroot.version}-1"}
    assert {name: installed.get(name) for name in expected} == expected
    assert set(expected) <= box.held()
    assert (box.root / "etc/slurm/plugstack.conf").read_text() == "required /usr/local/lib/slurm/spank_pyxis.so\n"
    assert (box.root / "etc/gpufleet/pyxis-version").read_text() == f"{PINS.pyxis.version}\n"
    assert not (box.root / "etc/munge/munge.key").exists()
    # slurmctld's User= and SlurmUser: a system user the packages do not make, made by the real systemd-sysusers.
    (slurm,) = [line.split(":") for line in (box.root / "etc/passwd").read_text().splitlines()
                if line.startswith("slurm:")]
    assert int(slurm[2]) < 1000 and slurm[5:] == ["/var/lib/slurm", "/usr/sbin/nologin"]
    calls = (tmp_path / "systemctl.log").read_text().splitlines()
    assert calls == ["systemctl disable --now munge.service slurmctld.service slurmd.service"]
    # SchedMD's repository is trusted through its own key only.
    listed = (box.root / "etc/apt/sources.list.d/gpufleet-slurm.list").read_text()
    assert listed.startswith(f"deb [arch=amd64 signed-by={box.root}/usr/share/keyrings/gpufleet-slurm.asc] file://")


def test_the_shipped_lock_leaves_enroot_without_a_sha256_so_the_bake_refuses_it(tmp_path):
    box, env_file = _world(tmp_path, enroot_sha256=False)
    done = _run(box, env_file)
    assert done.returncode == 2
    assert "enroot_4.1.2-1_all.deb: the lock pins no sha256 for it" in done.stderr
    assert "enroot" not in box.installed()


def test_a_slurm_repository_signed_by_another_key_installs_no_slurm(tmp_path):
    box, env_file = _world(tmp_path, slurm_signer="mallory")
    done = _run(box, env_file)
    assert done.returncode != 0
    assert PINS is not None and not set(PINS.packages.apt) & set(box.installed())
