"""images/install/*.sh under bash with stub commands: exact pins, holds, fabric manager only on NVSwitch."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
from apt_sandbox import signing_key
from conftest import REPO, shellcheck

from gpufleet.lock import load_lock, render_install_env
from gpufleet.lock.model import Profile

INSTALL = REPO / "images" / "install"
# Every apt-get call waits for the dpkg lock (common.sh apt_get).
APT = "apt-get -o DPkg::Lock::Timeout=600 "
STUBS = ("apt-get", "apt-cache", "apt-mark", "systemctl", "curl", "dpkg", "dpkg-query", "sha256sum", "modinfo",
         "nvidia-ctk")
# pyxis's `make install` (NVIDIA/pyxis Makefile): the plugin and its one-line plugstack entry under DESTDIR.
MAKE_STUB = """#!/bin/bash
echo "make $*" >> "$STUB_LOG"
for a; do [[ $a == DESTDIR=* ]] && DESTDIR=${a#DESTDIR=}; done
mkdir -p "$DESTDIR/usr/local/share/pyxis"
echo "required /usr/local/lib/slurm/spank_pyxis.so" > "$DESTDIR/usr/local/share/pyxis/pyxis.conf"
"""
TOOLKIT_KEY = "C95B321B61E88C1809C4F759DDCAE044F796ECB0"  # the lock's, for NVIDIA's container toolkit repository
# Canonical's EKS image carries kubelet as the kubelet-eks snap (`snap list` columns: Name Version Rev Tracking ...).
SNAP_STUB = """#!/bin/bash
echo "snap $*" >> "$STUB_LOG"
echo "Name         Version  Rev  Tracking       Publisher  Notes"
echo "kubelet-eks  ${KUBELET:-1.35.0}   99   1.35.0/stable  canonical  classic"
"""
# gpgv reports the good signature of the key the lock pins (EFA's by the signed file's name: mktemp's random names
# may hold "efa"); python3 (dearmor, unzip) lays out the AWS CLI's installer where unzip_to would.
AWS_CLI_KEY = "FB5DB77FD5C118B80511ADA8A6310ACC4672475C"
EFA_KEY = "4E9091BCBB97A96B26B15E59A05480B1DD2D3CCC"  # the lock's, from the EC2 user guide
MICROSOFT_KEY = "BC528686B50D79E339D3721CEB3E94ADBE1229CF"
FSX_KEY = "9C36DD9C515F10DBC3AA835C5D5CCC3383A962E1"  # the lock's, for the FSx for Lustre client repository
AWS_KERNEL = "6.8.0-1015-aws"  # what the stand-in uname -r says the AWS builder runs: the image's kernel
GPGV_STUB = f"""#!/bin/bash
echo "gpgv $*" >> "$STUB_LOG"
key={AWS_CLI_KEY}
[[ $(basename "${{!#}}") == *efa* ]] && key={EFA_KEY}
echo "[GNUPG:] VALIDSIG $key 2026-01-01 0 4 0 1 10 00 $key"
"""
# gpg --show-keys: the pinned key for each key file the bake fetches.
GPG_STUB = f"""#!/bin/bash
echo "gpg $*" >> "$STUB_LOG"
case ${{!#}} in
    *microsoft.asc) fpr={MICROSOFT_KEY} ;;
    *container-toolkit* | *gpufleet-libnvidia-container*) fpr={TOOLKIT_KEY} ;;
    *gpufleet-slurm*) fpr={MICROSOFT_KEY} ;;
    *fsx-ubuntu-public-key*) fpr=${{FSX_KEY_FOUND:-{FSX_KEY}}} ;;
    *) fpr={"F" * 40} ;;
esac
echo "pub:-:4096:1:0000000000000000:0:::-:::scESC::::::23::0:"
echo "fpr:::::::::$fpr:"
"""
PYTHON_STUB = """#!/bin/bash
echo "python3 ${*: -2}" >> "$STUB_LOG"
dest=${!#}
if [[ -d $dest ]]; then
    mkdir -p "$dest/aws"
    printf '#!/bin/bash\\necho "aws/install $*" >> "$STUB_LOG"\\n' > "$dest/aws/install"
    chmod +x "$dest/aws/install"
fi
"""
# tar also lays out the installer directory that the archive would hold, with a logging installer inside.
TAR_STUB = """#!/bin/bash
echo "tar $*" >> "$STUB_LOG"
while [[ $# -gt 0 ]]; do [[ "$1" == -C ]] && dest=$2; shift; done
for d in aws-efa-installer/efa_installer.sh erdma_installer/install.sh; do
    mkdir -p "$dest/$(dirname "$d")"
    printf '#!/bin/bash\\necho "%s $*" >> "$STUB_LOG"\\n' "$(basename "$d")" > "$dest/$d"
    chmod +x "$dest/$d"
done
"""


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def stubbed(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in STUBS:
        _executable(bin_dir / name, f'#!/bin/bash\necho "{name} $*" >> "$STUB_LOG"\n')
    _executable(bin_dir / "tar", TAR_STUB)
    _executable(bin_dir / "make", MAKE_STUB)
    # Reads its stdin as the real one does: a stub that exits first breaks the script's pipe (SIGPIPE, exit 141).
    _executable(bin_dir / "debconf-set-selections",
                '#!/bin/bash\necho "debconf-set-selections $(cat)" >> "$STUB_LOG"\n')
    _executable(bin_dir / "gpgv", GPGV_STUB)
    _executable(bin_dir / "gpg", GPG_STUB)
    _executable(bin_dir / "python3", PYTHON_STUB)
    _executable(bin_dir / "snap", SNAP_STUB)
    _executable(bin_dir / "uname", f"#!/bin/bash\necho {AWS_KERNEL}\n")
    # The Azure bake boots the Lustre client's supported LTS kernel (test_kernel_azure.py).
    (tmp_path / "root/boot").mkdir(parents=True)
    (tmp_path / "root/boot/vmlinuz-5.15.0-1089-azure").touch()
    # dkms logs its calls and reports the driver's module built for the kernel asked about (the last argument).
    _executable(bin_dir / "dkms", '#!/bin/bash\necho "dkms $*" >> "$STUB_LOG"\n'
                '[[ $1 == status ]] && echo "nvidia/580.126.16, ${!#}, x86_64: installed"\nexit 0\n')
    log = tmp_path / "calls.log"
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "STUB_LOG": str(log),
        "GPUFLEET_ROOT": str(tmp_path / "root"),
        "HOME": str(tmp_path),
    }
    return tmp_path, env, log


def pinned_enroot(profile: Profile) -> Profile:
    """The profile once enroot's sha256 is pinned (the shipped lock's null is refused: test_slurm_install.py)."""
    if profile.slurm is None:
        return profile
    enroot = {name: component.model_copy(update={"sha256": "0" * 64})
              for name, component in profile.slurm.downloads().items() if name.startswith("enroot")}
    return profile.model_copy(update={"slurm": profile.slurm.model_copy(update=enroot)})


def _install(stubbed, cloud: str, *args: str, profile: str = "cuda12.8-r580",
             pins: Profile | None = None) -> tuple[int, list[str], str]:
    tmp_path, env, log = stubbed
    env_file = tmp_path / f"{cloud}.env"
    env_file.write_text(render_install_env(pins or pinned_enroot(load_lock().profiles[profile]), cloud))
    done = subprocess.run(
        ["bash", str(INSTALL / "install.sh"), "--env", str(env_file), *args],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )
    calls = log.read_text().splitlines() if log.exists() else []
    return done.returncode, calls, done.stderr


def test_aws_nvswitch_type_installs_exact_pins_holds_and_leaves_fabric_manager_to_the_bootstrap(stubbed):
    rc, calls, err = _install(stubbed, "aws", "--instance-type", "p5.48xlarge")
    assert rc == 0, err
    assert f"{APT}install -y --no-install-recommends nvidia-driver-pinning-580.126.16" in calls
    assert (
        f"{APT}install -y --no-install-recommends nvidia-open cuda-toolkit-12-8=12.8.1-1 "
        "datacenter-gpu-manager-4-core=1:4.5.2-1 datacenter-gpu-manager-4-cuda13=1:4.5.2-1 "
        "libnccl-dev=2.28.9-1+cuda12.9 libnccl2=2.28.9-1+cuda12.9 nvidia-fabricmanager=580.126.16-1"
    ) in calls
    assert (
        "apt-mark -o DPkg::Lock::Timeout=600 hold nvidia-driver-pinning-580.126.16 nvidia-open cuda-toolkit-12-8 "
        "datacenter-gpu-manager-4-core datacenter-gpu-manager-4-cuda13 libnccl-dev libnccl2 "
        "nvidia-fabricmanager"
    ) in calls
    # One image serves NVSwitch and PCIe types: the node bootstrap starts the fabric manager per group.
    assert "systemctl enable nvidia-fabricmanager" not in calls
    assert "systemctl disable nvidia-fabricmanager" in calls
    efa = "https://efa-installer.amazonaws.com/aws-efa-installer-1.51.0.tar.gz"
    curl = [c.rsplit(" ", 1)[1] for c in calls if c.startswith("curl ") and "efa" in c]
    assert curl == [efa, efa + ".sig", "https://efa-installer.amazonaws.com/aws-efa-installer.key"]
    # No published sha256 for 1.51.0: AWS's signature by the lock's key is checked before the installer runs.
    checked = next(i for i, c in enumerate(calls) if c.startswith("gpgv ") and c.endswith("efa.tar.gz"))
    assert checked < calls.index("efa_installer.sh -y")
    # Checksums are the cuda-keyring's, the CloudWatch agent's, the nvidia-ml-py wheel's, enroot's two .debs', the
    # pyxis source's and the power program's seven SDK wheels.
    assert len([c for c in calls if c.startswith("sha256sum")]) == 13
    # The Slurm step ran (a profile that pins Slurm), leaving its services off for the node bootstrap.
    assert "systemctl disable --now munge.service slurmctld.service slurmd.service" in calls
    assert "systemctl enable nvidia-dcgm" in calls


def test_aws_installs_the_pinned_cloudwatch_agent_and_the_lustre_client(stubbed):
    tmp_path, _, _ = stubbed
    rc, calls, err = _install(stubbed, "aws", "--nvswitch", "yes")
    assert rc == 0, err
    agent = "https://amazoncloudwatch-agent.s3.amazonaws.com/ubuntu/amd64/1.300072.0b1766/amazon-cloudwatch-agent.deb"
    assert any(c.startswith("curl ") and c.endswith(agent) for c in calls)
    assert any(c.startswith(f"{APT}install ") and c.endswith("amazon-cloudwatch-agent.deb") for c in calls)
    (lustre,) = [c for c in calls if c.startswith(f"{APT}install") and "lustre-client-modules-" in c]
    # The boot kernel's own modules and mount.lustre's package, never lustre-client-modules-aws (it pulls a kernel).
    assert lustre == f"{APT}install -y --no-install-recommends lustre-client-modules-{AWS_KERNEL} lustre-client-utils"
    listing = (tmp_path / "root/etc/apt/sources.list.d/fsxlustreclientrepo.list").read_text()
    assert "https://fsx-lustre-client-repo.s3.amazonaws.com/ubuntu jammy main" in listing


def test_other_clouds_install_no_aws_agent(stubbed):
    rc, calls, err = _install(stubbed, "alicloud", "--nvswitch", "no")
    assert rc == 0, err
    assert not any("cloudwatch" in c or "lustre" in c for c in calls)


def test_non_nvswitch_type_never_enables_fabric_manager(stubbed):
    rc, calls, err = _install(stubbed, "aws", "--instance-type", "g6e.48xlarge")
    assert rc == 0, err
    assert "systemctl enable nvidia-fabricmanager" not in calls
    assert "systemctl disable nvidia-fabricmanager" in calls
    assert any(c.endswith("nvidia-fabricmanager=580.126.16-1") for c in calls)


def test_azure_installs_verified_doca_and_holds_it(stubbed):
    rc, calls, err = _install(stubbed, "azure", "--nvswitch", "yes", profile="cuda13.0-r580")
    assert rc == 0, err
    doca = "https://www.mellanox.com/downloads/DOCA/DOCA_v2.10.0/host/doca-host_2.10.0-093000-25.01-ubuntu2204_amd64.deb"
    assert any(c.startswith("curl ") and c.endswith(doca) for c in calls)
    assert "sha256sum --check --strict -" in calls
    assert any(c.startswith(f"{APT}install ") and c.endswith("doca-host.deb") for c in calls)
    assert f"{APT}install -y --no-install-recommends doca-ofed" in calls
    assert "apt-mark -o DPkg::Lock::Timeout=600 hold doca-ofed" in calls
    assert any("libnccl2=2.28.9-1+cuda13.0" in c for c in calls)
    assert "systemctl enable nvidia-fabricmanager" not in calls  # the node bootstrap starts it per group


def test_alicloud_installs_erdma(stubbed):
    rc, calls, err = _install(stubbed, "alicloud", "--nvswitch", "no")
    assert rc == 0, err
    erdma = "https://mirrors.aliyun.com/erdma/erdma_installer-1.5.7.tar.gz"
    assert any(c.startswith("curl ") and c.endswith(erdma) for c in calls)
    assert "install.sh --batch" in calls
    assert "systemctl enable nvidia-fabricmanager" not in calls


def test_installs_node_check_and_wrapper(stubbed):
    tmp_path, _, _ = stubbed
    rc, calls, err = _install(stubbed, "aws", "--nvswitch", "yes")
    assert rc == 0, err
    root = tmp_path / "root"
    assert (root / "opt/gpufleet/nodecheck/images/nodecheck/__main__.py").is_file()
    wrapper = root / "usr/local/bin/gpufleet-nodecheck"
    assert os.access(wrapper, os.X_OK)
    assert "python3 -m images.nodecheck --expect /etc/gpufleet/expect.json" in wrapper.read_text()
    vendor = root / "opt/gpufleet/nodecheck/vendor"
    wheel = "https://files.pythonhosted.org/packages/53/a1/1681dfa1c904d4e3e72e51b55a0ff012d50b766843ef832d584abe2113c6/"
    assert any(c.startswith("curl ") and c.endswith(wheel + "nvidia_ml_py-13.615.71-py3-none-any.whl") for c in calls)
    assert any(c.startswith("python3 ") and c.endswith(f"nvidia_ml_py-13.615.71-py3-none-any.whl {vendor}")
               for c in calls)
    assert not any("pip" in c.split()[:3] for c in calls)  # stock Ubuntu 22.04 has no pip


def test_fabric_manager_must_equal_driver(stubbed):
    tmp_path, env, log = stubbed
    env_file = tmp_path / "bad.env"
    good = render_install_env(load_lock().profiles["cuda12.8-r580"], "aws")
    env_file.write_text(good.replace("FABRIC_MANAGER_VERSION=580.126.16", "FABRIC_MANAGER_VERSION=580.82.07"))
    done = subprocess.run(
        ["bash", str(INSTALL / "install.sh"), "--env", str(env_file), "--nvswitch", "yes"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 2
    assert "fabric manager 580.82.07 differs from driver 580.126.16" in done.stderr
    # Only the machine was settled and its boot kernel chosen: no download, no driver.
    assert not any(c.startswith("curl ") or "nvidia" in c for c in log.read_text().splitlines())


def test_usage_errors(stubbed):
    rc, calls, err = _install(stubbed, "aws")
    assert rc == 2 and "give --instance-type or --nvswitch yes|no" in err and calls == []
    rc, calls, err = _install(stubbed, "aws", "--nvswitch", "maybe")
    assert rc == 2 and "--nvswitch: must be yes or no" in err


def test_shellcheck_clean():
    scripts = sorted(str(p) for p in (REPO / "images").rglob("*.sh"))
    assert scripts
    done = subprocess.run([shellcheck(), "-x", *scripts], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout


def test_alicloud_installs_the_pinned_aliyun_cli_checked(stubbed):
    rc, calls, err = _install(stubbed, "alicloud", "--nvswitch", "no")
    assert rc == 0, err
    url = "https://github.com/aliyun/aliyun-cli/releases/download/v3.0.174/aliyun-cli-linux-3.0.174-amd64.tgz"
    assert any(c.startswith("curl ") and c.endswith(url) for c in calls)
    assert any(c.startswith("sha256sum --check") for c in calls)
    (extract,) = [c for c in calls if c.startswith("tar -xzf") and "aliyun-cli.tgz" in c]
    assert extract.endswith("/usr/local/bin aliyun")


def test_aws_installs_the_cli_only_after_its_signature_checks(stubbed):
    rc, calls, err = _install(stubbed, "aws", "--nvswitch", "yes")
    assert rc == 0, err
    zip_url = "https://awscli.amazonaws.com/awscli-exe-linux-x86_64-2.36.11.zip"
    fetched = next(i for i, c in enumerate(calls) if c.startswith("curl ") and c.endswith(zip_url))
    checked = next(i for i, c in enumerate(calls) if c.startswith("gpgv --status-fd 1 --keyring ") and "awscliv2" in c)
    installed = next(i for i, c in enumerate(calls) if c.startswith("aws/install --install-dir "))
    assert fetched < checked < installed
    assert any(c.startswith("curl ") and c.endswith(zip_url + ".sig") for c in calls)


def test_aws_cli_with_a_signature_by_another_key_is_refused(stubbed):
    tmp_path, _, _ = stubbed
    (tmp_path / "bin" / "gpgv").write_text(GPGV_STUB.replace(AWS_CLI_KEY, "0" * 40))
    rc, calls, err = _install(stubbed, "aws", "--nvswitch", "yes")
    assert rc == 2 and "awscliv2.zip: no good signature by FB5DB77FD5C118B80511ADA8A6310ACC4672475C" in err
    assert not any(c.startswith("aws/install") for c in calls)


@pytest.mark.parametrize(("cloud", "first", "second"), [
    ("azure", "doca-host.deb", "cuda-keyring.deb"),      # azhpc-images: DOCA-OFED before the driver
    ("aws", "cuda-keyring.deb", "efa.tar.gz"),
    ("alicloud", "cuda-keyring.deb", "erdma.tar.gz"),
])
def test_fabric_stack_order_per_cloud(stubbed, cloud, first, second):
    rc, calls, err = _install(stubbed, cloud, "--nvswitch", "yes")
    assert rc == 0, err
    fetches = [c for c in calls if c.startswith("curl ")]
    at = {name: next(i for i, c in enumerate(fetches) if name in c) for name in (first, second)}
    assert at[first] < at[second]


def test_cuda_repository_is_added_from_the_checked_keyring_before_any_install(stubbed):
    rc, calls, err = _install(stubbed, "aws", "--nvswitch", "yes")
    assert rc == 0, err
    keyring = "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/cuda-keyring_1.1-1_all.deb"
    fetched = next(i for i, c in enumerate(calls) if c.startswith("curl ") and c.endswith(keyring))
    assert calls[fetched + 1].startswith("sha256sum --check")
    install = f"{APT}install "
    assert calls[fetched + 2].startswith(install) and calls[fetched + 2].endswith("cuda-keyring.deb")
    first_install = next(i for i, c in enumerate(calls)  # after kernel.sh's: the boot kernel's headers
                         if c.startswith(install) and "linux-headers-" not in c)
    assert fetched < first_install


def test_verify_signature_uses_the_real_gpgv_and_trusts_only_the_pinned_fingerprint(tmp_path):
    """common.sh's verify_signature with real gpg/gpgv: a key with armor headers (as keyservers send) verifies; the
    same good signature is refused when the lock pins another fingerprint."""
    gpg, fingerprint = signing_key("test")
    (tmp_path / "file").write_text("payload\n")
    subprocess.run([*gpg, "--detach-sign", "-o", str(tmp_path / "file.sig"), str(tmp_path / "file")], check=True)
    key = subprocess.run([*gpg, "--armor", "--comment", "Hostname: keys.example", "--export"], check=True,
                         capture_output=True, text=True).stdout
    (tmp_path / "key.asc").write_text(key)

    def verify(expected: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-c", f'source "{INSTALL}/common.sh"; verify_signature "$@"', "_",
                               str(tmp_path / "file"), str(tmp_path / "file.sig"), str(tmp_path / "key.asc"), expected],
                              capture_output=True, text=True, check=False)

    assert verify(fingerprint).returncode == 0
    refused = verify(AWS_CLI_KEY)
    assert refused.returncode == 2 and f"file: no good signature by {AWS_CLI_KEY}" in refused.stderr


def _without(cloud: str, group: str, name: str, field: str) -> Profile:
    """The shipped profile with one download's check (sha256 or key fingerprint) left out."""
    profile = load_lock().profiles["cuda12.8-r580"]
    by_cloud = getattr(profile, group)
    component = by_cloud[cloud][name].model_copy(update={field: None})
    return profile.model_copy(update={group: {**by_cloud, cloud: {**by_cloud[cloud], name: component}}})


@pytest.mark.parametrize(("cloud", "group", "name", "field", "message"), [
    ("alicloud", "fabric", "erdma", "sha256",
     "https://mirrors.aliyun.com/erdma/erdma_installer-1.5.7.tar.gz: the lock pins no sha256 for it"),
    ("aws", "agents", "lustre_client", "key_fingerprint",
     "fsx-ubuntu-public-key.asc: the lock pins no key_fingerprint"),
])
def test_unverified_downloads_stop_the_bake_naming_the_field(stubbed, cloud, group, name, field, message):
    """A download the lock gives no sha256 or key fingerprint: the bake stops before fetching or running it."""
    rc, calls, err = _install(stubbed, cloud, "--nvswitch", "no", pins=_without(cloud, group, name, field))
    assert rc == 2 and message in err, err
    assert not any("erdma" in c or "fsx-ubuntu" in c for c in calls if c.startswith("curl "))
    assert "install.sh --batch" not in calls and not any("lustre-client-modules" in c for c in calls)


def test_the_fsx_key_is_trusted_only_at_the_pinned_fingerprint(stubbed):
    """The lock pins fsx-ubuntu-public-key.asc's fingerprint: a key AWS rotated (or a substituted one) fails the bake
    closed before apt trusts it; the pinned key goes on to the Lustre client."""
    tmp_path, env, _ = stubbed
    rc, calls, err = _install(stubbed, "aws", "--nvswitch", "no")
    assert rc == 0, err
    assert any(f"lustre-client-modules-{AWS_KERNEL}" in c for c in calls)
    (tmp_path / "calls.log").unlink()
    env["FSX_KEY_FOUND"] = "0" * 40
    rc, calls, err = _install(stubbed, "aws", "--nvswitch", "no")
    assert rc == 2 and f"fsx-ubuntu-public-key.asc: key {'0' * 40} is not {FSX_KEY}" in err, err
    assert not any("lustre-client-modules" in c for c in calls)


def test_a_signing_key_with_another_fingerprint_stops_the_bake(stubbed):
    tmp_path, _, _ = stubbed
    (tmp_path / "bin" / "gpg").write_text(GPG_STUB.replace(MICROSOFT_KEY, "0" * 40))
    rc, calls, err = _install(stubbed, "azure", "--nvswitch", "no", profile="cuda13.0-r580")
    assert rc == 2 and f"microsoft.asc: key {'0' * 40} is not {MICROSOFT_KEY}" in err, err
    assert not (tmp_path / "root/usr/share/keyrings/microsoft.asc").exists()
    assert not any("amlfs-lustre-client-dkms" in c for c in calls)


def test_fetch_without_a_hash_fails_closed(stubbed):
    """common.sh's fetch itself: no sha256, no download."""
    tmp_path, env, log = stubbed
    done = subprocess.run(["bash", "-c", f'source "{INSTALL}/common.sh"; fetch https://example.invalid/x "$1" ""', "_",
                           str(tmp_path / "x")], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "https://example.invalid/x: the lock pins no sha256" in done.stderr
    assert not log.exists()
