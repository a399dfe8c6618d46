"""The lock's `slurm:` section: one Slurm release for every slurm-smd package, refused with its field where it is not;
read by `lock resolve` from each signed repository (a component other than main included); unread, the image stack's
plan names each fact; the bake's pins carry it."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import libyaml_files
from conftest import shipped_plan
from local_apt_repository import LocalAptRepositories
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.lock import DEFAULT_LOCK_PATH, load_lock, render_install_env
from gpufleet.lock.facts import ResolvedFacts
from gpufleet.lock.needs import AptNeed, apt_key
from gpufleet.lock_resolve import resolve

PROFILE = "cuda12.8-r580"
NOW = datetime(2026, 11, 28, tzinfo=timezone.utc)


def _images_check(tmp_path: Path, change) -> tuple[int, str]:
    raw = libyaml_files.load(DEFAULT_LOCK_PATH.read_text())
    change(raw["profiles"])
    path = tmp_path / "lock.yaml"
    path.write_text(libyaml_files.dump(raw))
    done = CliRunner().invoke(app, ["images", "check", "--lock", str(path), "--profile", PROFILE])
    return done.exit_code, done.output


def test_a_slurm_package_of_another_release_is_refused_naming_the_field(tmp_path: Path) -> None:
    def mix(profiles: dict) -> None:
        profiles[PROFILE]["slurm"]["packages"]["apt"]["slurm-smd-dev"] = "24.11.7-1"
    rc, output = _images_check(tmp_path, mix)
    assert rc == 2
    assert "slurm-smd-dev must be version 25.11.5-<revision>" in " ".join(output.split())


def test_a_kubernetes_node_image_with_slurm_is_refused(tmp_path: Path) -> None:
    def add(profiles: dict) -> None:
        profiles["cuda12.8-r580-eks1.35"]["slurm"] = profiles[PROFILE]["slurm"]
    rc, output = _images_check(tmp_path, add)
    assert rc == 2 and "a Kubernetes node image runs no Slurm" in " ".join(output.split())


def test_the_bake_pins_carry_slurm_and_a_kubernetes_image_expects_no_slurm_command() -> None:
    lock = load_lock()
    pins = dict(line.split("=", 1) for line in render_install_env(lock.profiles[PROFILE], "aws").splitlines()
                if "=" in line and not line.startswith("#"))
    assert pins["SLURM_VERSION"] == "25.11.5"
    assert pins["SLURM_PACKAGES_SOURCE"] == "'https://packages.microsoft.com/repos/slurm-ubuntu-jammy stable main'"
    assert pins["SLURM_MUNGE_APT_PINS"] == "'libmunge2=0.5.14-6ubuntu0.1 munge=0.5.14-6ubuntu0.1'"
    assert "SLURM_MUNGE_SOURCE" not in pins  # the image's own archive
    assert pins["PYXIS_SHA256"] == "9c4cdb79a67301d8ea05951aa4d2c205f40cf6145e338214b0191add8b36d6c4"
    assert "ENROOT_SHA256" not in pins  # unpinned: the bake's fetch refuses it
    assert {"slurmd", "slurmctld", "munged", "enroot"} <= set(pins["NODE_TOOLS"].strip("'").split())
    eks = render_install_env(lock.profiles["cuda12.8-r580-eks1.35"], "aws")
    assert "SLURM_VERSION" not in eks and " slurmd " not in eks


def test_the_image_stack_plan_names_each_unread_slurm_fact() -> None:
    plan = shipped_plan("aws-images")
    found = {f["field"] for f in plan.summary.get("unresolved_facts", [])}
    at = f"profiles.{PROFILE}.slurm"
    assert {f"{at}.packages.apt", f"{at}.munge.apt", f"{at}.container_cli.apt", f"{at}.enroot.sha256",
            f"{at}.enroot_caps.sha256", f"{at}.pyxis.sha256", f"{at}.packages.key_fingerprint",
            f"{at}.power_sdk.aws[0].sha256"} <= found
    # An image bakes its own cloud's power program SDK only.
    assert not any(".power_sdk.azure" in field or ".power_sdk.alicloud" in field for field in found)


def test_the_azure_image_stack_plan_names_each_unread_power_sdk_wheel() -> None:
    plan = shipped_plan("azure-images")
    found = {f["field"] for f in plan.summary.get("unresolved_facts", [])}
    at = f"profiles.{PROFILE}.slurm.power_sdk"
    wheels = load_lock().profiles[PROFILE].slurm.power_wheels("azure")
    assert {f"{at}.azure[{index}].sha256" for index in range(len(wheels))} <= found
    assert not any(f"{at}.aws" in field for field in found)


def test_lock_resolve_reads_munge_from_the_archives_universe_component(tmp_path: Path) -> None:
    with LocalAptRepositories(tmp_path / "apt") as server:
        pins = (("libmunge2", "0.5.14-6ubuntu0.1"), ("munge", "0.5.14-6ubuntu0.1"))
        archive = server.add({name: [version] for name, version in pins}, suite="jammy-updates", component="universe")
        need = AptNeed(apt_key(archive.url, "jammy-updates universe"), (f"profiles.{PROFILE}.slurm.munge.apt",),
                       archive.url, "jammy-updates", pins, archive.key.fingerprint, f"{server.url}/files/key.asc",
                       component="universe")
        (server.root / "files").mkdir()
        (server.root / "files/key.asc").write_bytes(archive.key.armored)
        run = resolve([need], ResolvedFacts(), NOW)
    assert run.failed == {}
    assert set(run.facts.apt[need.key].packages) == {"munge=0.5.14-6ubuntu0.1", "libmunge2=0.5.14-6ubuntu0.1"}

