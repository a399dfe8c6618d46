"""Every command the node scripts run (components/bootstrap/scripts, as the bootstrap renders them) and what puts
it on the image: the Ubuntu 22.04 server image itself, or one of images/install/*.sh.

tests/images/test_node_tools.py renders every node script for every cloud, collects the commands each runs with a
shell parser and fails on one this table does not provide, so a new tool in a node script fails CI, not a node.
The image check (images/install/image-check.sh) runs `command -v` on each of a cloud's tools on the build VM and on a
fresh VM of the image, so a base-image assumption below that stops holding fails the bake, not the first boot.
"""

from __future__ import annotations

# Command -> the Ubuntu package that carries it on Ubuntu's 22.04 server images (Canonical's AMIs, the Azure
# marketplace image and Alibaba's public image all start from the server seed). Not read from a published image
# manifest here: the image check confirms each on every bake.
BASE_OS: dict[str, str] = {
    "awk": "mawk",
    "bash": "bash",
    "blkid": "util-linux",
    "cat": "coreutils",
    "curl": "curl",
    "date": "coreutils",
    "flock": "util-linux",
    "grep": "grep",
    "hostname": "hostname",
    "ip": "iproute2",
    "iptables": "iptables",
    "journalctl": "systemd",
    "lsblk": "util-linux",
    "mdadm": "mdadm",
    "mkdir": "coreutils",
    "mkfs.xfs": "xfsprogs",
    "mount": "mount",
    "mountpoint": "util-linux",
    "paste": "coreutils",
    "python3": "python3",
    "rm": "coreutils",
    "sed": "sed",
    "seq": "coreutils",
    "sleep": "coreutils",
    "systemctl": "systemd",
    "touch": "coreutils",
}

# Cloud -> command -> (the install script that installs it, text of that script that does so).
INSTALLED: dict[str, dict[str, tuple[str, str]]] = {
    "aws": {
        "aws": ("agents.sh", '"$work/aws/install"'),
        "/opt/aws/amazon-cloudwatch-agent/bin/amazon-cloudwatch-agent-ctl": (
            "agents.sh", 'apt_install "$work/amazon-cloudwatch-agent.deb"'),
        "mount.lustre": ("lustre.sh", 'apt_install "lustre-client-modules-$kernel" lustre-client-utils'),
    },
    # The bootstrap mounts storage.shared with `mount -t lustre`, which runs the client's mount.lustre helper.
    "azure": {"mount.lustre": ("lustre.sh", 'apt_install "$client"')},
    "alicloud": {
        "aliyun": ("agents.sh", 'tar -xzf "$work/aliyun-cli.tgz" -C "${GPUFLEET_ROOT:-}/usr/local/bin" aliyun'),
    },
}
# On every cloud: DCGM's dcgmi (the lock's datacenter-gpu-manager-4-core), nvidia-smi (the driver's utilities, which
# nvidia-open installs at the pinned driver version; MIG groups' boot script runs it) and the node check's wrapper.
for _tools in INSTALLED.values():
    _tools["dcgmi"] = ("gpu-stack.sh", 'apt_install nvidia-open "${pins[@]}"')
    _tools["nvidia-smi"] = ("gpu-stack.sh", 'apt_install nvidia-open "${pins[@]}"')
    _tools["gpufleet-nodecheck"] = ("nodecheck.sh", '"$root/usr/local/bin/gpufleet-nodecheck"')


# What images/install/slurm.sh installs where the profile pins Slurm (every cloud's VM image): the daemons the node
# bootstrap starts, munge's key tool, Slurm's clients and enroot (pyxis is a plugin, checked in plugstack.conf).
SLURM_TOOLS: dict[str, tuple[str, str]] = {
    **{tool: ("slurm.sh", 'install_held "${munge_pins[@]}"') for tool in ("munged", "mungekey")},
    **{tool: ("slurm.sh", 'install_held "${slurm_pins[@]}"')
       for tool in ("slurmctld", "slurmd", "scontrol", "sinfo", "squeue", "srun", "sbatch")},
    "enroot": ("slurm.sh", 'apt_install "$work/enroot.deb" "$work/enroot+caps.deb"'),
}
for _tools in INSTALLED.values():
    _tools.update(SLURM_TOOLS)


def installed_tools(cloud: str) -> set[str]:
    """Every command a node of `cloud` runs: the base image's and those the install scripts add."""
    return set(BASE_OS) | set(INSTALLED.get(cloud, {}))
