"""The container toolkit in the bake: only a Kubernetes profile's image gets it, from NVIDIA's repository at the lock's
versions, as containerd's default runtime, on a base whose kubelet is the profile's Kubernetes minor."""

from __future__ import annotations

from test_installer import APT, TOOLKIT_KEY, _install, stubbed  # noqa: F401  (stubbed is the fixture)

from gpufleet.lock import load_lock, render_install_env

KUBERNETES = "cuda12.8-r580-eks1.35"
PINS = ("libnvidia-container-tools=1.20.0-1 libnvidia-container1=1.20.0-1 nvidia-container-toolkit=1.20.0-1 "
        "nvidia-container-toolkit-base=1.20.0-1")


def test_the_rendered_pins_name_the_toolkit_only_for_a_kubernetes_profile():
    lock = load_lock()
    node = render_install_env(lock.profiles[KUBERNETES], "aws")
    assert "KUBERNETES_VERSION=1.35\n" in node
    assert f"CONTAINER_TOOLKIT_APT_PINS='{PINS}'\n" in node
    assert f"CONTAINER_TOOLKIT_KEY_FINGERPRINT={TOOLKIT_KEY}\n" in node
    assert "UBUNTU_CODENAME=noble\n" in node  # Canonical's EKS 1.35 image is Ubuntu 24.04
    assert "/repos/ubuntu2404/" in node
    # The image check (bundle.IMAGE_CHECK) finds the toolkit's commands on the build and test instances.
    tools = next(line for line in node.splitlines() if line.startswith("NODE_TOOLS=")).split("=", 1)[1]
    assert {"nvidia-ctk", "nvidia-container-runtime"} <= set(tools.strip("'").split())
    vm = render_install_env(lock.profiles["cuda12.8-r580"], "aws")
    assert "KUBERNETES_VERSION" not in vm and "CONTAINER_TOOLKIT" not in vm
    assert "UBUNTU_CODENAME=jammy\n" in vm and "nvidia-ctk" not in vm


def test_a_kubernetes_image_installs_the_pinned_toolkit_and_makes_it_containerds_runtime(stubbed):  # noqa: F811
    tmp_path, _, _ = stubbed
    rc, calls, err = _install(stubbed, "aws", "--nvswitch", "yes", profile=KUBERNETES)
    assert rc == 0, err
    key = "https://nvidia.github.io/libnvidia-container/gpgkey"
    fetched = next(i for i, c in enumerate(calls) if c.startswith("curl ") and c.endswith(key))
    listing = (tmp_path / "root/etc/apt/sources.list.d/nvidia-container-toolkit.list").read_text()
    assert listing.endswith(" https://nvidia.github.io/libnvidia-container/stable/deb/amd64 /\n")
    assert "signed-by=" in listing and listing.split("signed-by=")[1].startswith(str(tmp_path / "root/usr/share"))
    installed = calls.index(f"{APT}install -y --no-install-recommends {PINS}")
    held = calls.index("apt-mark -o DPkg::Lock::Timeout=600 hold libnvidia-container-tools libnvidia-container1 "
                       "nvidia-container-toolkit nvidia-container-toolkit-base")
    configured = calls.index("nvidia-ctk runtime configure --runtime=containerd --set-as-default")
    assert fetched < installed < held < configured < calls.index("systemctl restart containerd")
    assert (tmp_path / "root/etc/gpufleet/kubelet-version").read_text() == "1.35.0\n"
    # The Lustre client's suite is the base image's release.
    lustre = (tmp_path / "root/etc/apt/sources.list.d/fsxlustreclientrepo.list").read_text()
    assert lustre.endswith(" noble main\n")


def test_a_vm_image_gets_no_toolkit(stubbed):  # noqa: F811
    tmp_path, _, _ = stubbed
    rc, calls, err = _install(stubbed, "aws", "--nvswitch", "yes")
    assert rc == 0, err
    assert not any("container-toolkit" in c or c.startswith(("nvidia-ctk", "snap ")) for c in calls)
    assert not (tmp_path / "root/etc/apt/sources.list.d/nvidia-container-toolkit.list").exists()


def test_a_base_of_another_kubernetes_minor_stops_the_bake_before_the_toolkit(stubbed):  # noqa: F811
    _, env, _ = stubbed
    env["KUBELET"] = "1.34.2"
    rc, calls, err = _install(stubbed, "aws", "--nvswitch", "yes", profile=KUBERNETES)
    assert rc == 2 and "kubelet-eks 1.34.2: the base image is not Kubernetes 1.35's" in err
    assert not any("container-toolkit" in c for c in calls if c.startswith(("curl ", APT)))


def test_a_toolkit_key_of_another_fingerprint_is_never_trusted(stubbed):  # noqa: F811
    tmp_path, _, _ = stubbed
    gpg = tmp_path / "bin" / "gpg"
    gpg.write_text(gpg.read_text().replace(TOOLKIT_KEY, "0" * 40))
    rc, calls, err = _install(stubbed, "aws", "--nvswitch", "yes", profile=KUBERNETES)
    assert rc == 2 and f"gpgkey: key {'0' * 40} is not {TOOLKIT_KEY}" in err
    assert not (tmp_path / "root/usr/share/keyrings/nvidia-container-toolkit-keyring.asc").exists()
    assert not any(c.startswith("nvidia-ctk") for c in calls)
