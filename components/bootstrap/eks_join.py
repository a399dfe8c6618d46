"""EKS nodes: the group's user data plus the join, which starts the kubelet only once the node check passed.

The image is the project's bake on Canonical's Ubuntu EKS AMI, which joins with `/etc/eks/bootstrap.sh
<cluster-name>` (documentation.ubuntu.com/aws, aws-how-to/kubernetes/deploy-managed-node-group, "Create a launch
template"). Its bootstrap.sh is Canonical's customized copy of Amazon's and takes Amazon's flags
`--apiserver-endpoint`, `--b64-cluster-ca`, `--dns-cluster-ip` and `--kubelet-extra-args` (awslabs/amazon-eks-ami
templates/al2/runtime/bootstrap.sh@0ab84280 lines 23-34, print_help; the Ubuntu image's copy parses the same four in
its option loop and ends with `snap start --enable kubelet-eks`, so the kubelet runs as the unit
snap.kubelet-eks.daemon.service).

What is added to the cloud-config the VM bootstrap renders (components.bootstrap.cloud_init):
- /etc/gpufleet/eks.env: the cluster, its endpoint and CA, the cluster DNS address, the kubelet's labels and taints;
- gpufleet-eks-join (scripts/eks-join.sh) and its unit, which Requires= and runs After= gpufleet-health.service: the
  join happens only on a node whose check passed (a failed check abandons the launch hook as on a VM);
- drop-ins on kubelet.service and snap.kubelet-eks.daemon.service with the same two lines: after a reboot the kubelet
  waits for the node check again and stays down when it fails;
- on EFA nodes, a drop-in that lifts containerd's locked-memory limit (CONTAINERD_MEMLOCK_DROP_IN).

The whole document is then gzipped: cloud-init uncompresses gzip-compressed user data and uses it as if it were
not compressed (help.ubuntu.com/community/CloudInit, "User Data Input Formats": "Gzip Compressed Content"), and a p5
group's plain cloud-config is already within 1.5 KB of EC2's 16 KB cap, which the CA alone fills.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

import yaml

from gpufleet.stackfile.scheduler import LABEL_VALUE
from gpufleet.yaml_libyaml import SAFE_LOADER

from .added_files import add_unit, gzip_user_data
from .cloud_init import ETC, SBIN, UNITS, _file, _LiteralDumper, _packed_file, node_script
from .errors import BootstrapError

JOIN_UNIT = "gpufleet-eks-join.service"
# The kubelet's unit on the Ubuntu EKS image (a snap's daemon) and on images that install it as a plain unit.
KUBELET_UNITS = ("snap.kubelet-eks.daemon.service", "kubelet.service")
KUBELET_DROP_IN = "[Unit]\nRequires=gpufleet-health.service\nAfter=gpufleet-health.service\n"
# NodeRestriction (Kubernetes admission-controllers, "NodeRestriction"; kubernetes plugin/pkg/admission/
# noderestriction/admission.go getForbiddenLabels) refuses a kubelet any label of its own under
# node-restriction.kubernetes.io/, and any under kubernetes.io/ or k8s.io/ (or their subdomains) unless it is one of
# the kubelet labels or under kubelet.kubernetes.io/ or node.kubernetes.io/ (k8s.io/kubelet pkg/apis/
# well_known_labels.go, kubeletLabels and kubeletLabelNamespaces); the kubelet itself refuses to start with such a
# label in --node-labels (cmd/kubelet/app/options/options.go, "unknown 'kubernetes.io' or 'k8s.io' labels").
KUBELET_LABELS = frozenset({
    "kubernetes.io/hostname", "kubernetes.io/arch", "kubernetes.io/os", "beta.kubernetes.io/arch",
    "beta.kubernetes.io/os", "beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type",
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
})
KUBELET_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")
RESERVED_NAMESPACES = ("kubernetes.io", "k8s.io")
RESTRICTED_NAMESPACE = "node-restriction.kubernetes.io"
# Pods get containerd's locked-memory limit: its unit sets none (containerd/containerd containerd.service@301026e5,
# only LimitNPROC and LimitCORE), and the runtime spec it builds sets only RLIMIT_NOFILE (pkg/oci/spec.go:180-185),
# so runc leaves the rest as containerd's own: systemd's default, a few MiB. libfabric's EFA provider registers
# (locks) its buffers and NCCL over EFA then fails with -12 (aws/aws-ofi-nccl#107: "--ulimit memlock=-1" on Ubuntu;
# awslabs/awsome-distributed-ai#647: set max locked memory unlimited). The join restarts containerd with it
# (eks-join.sh): cloud-init writes the drop-in after containerd may have started.
CONTAINERD_MEMLOCK_DROP_IN = ("/etc/systemd/system/containerd.service.d/gpufleet-memlock.conf",
                              "[Service]\nLimitMEMLOCK=infinity\n")


def _in_namespace(namespace: str, of: str) -> bool:
    return namespace == of or namespace.endswith("." + of)


def kubelet_may_set(key: str) -> bool:
    """Whether NodeRestriction lets a kubelet put label `key` on its own Node."""
    namespace = key.split("/", 1)[0] if "/" in key else ""
    if _in_namespace(namespace, RESTRICTED_NAMESPACE):
        return False
    if any(_in_namespace(namespace, reserved) for reserved in RESERVED_NAMESPACES):
        return key in KUBELET_LABELS or any(_in_namespace(namespace, ns) for ns in KUBELET_NAMESPACES)
    return True


def dns_cluster_ip(service_cidr: str) -> str:
    """The cluster DNS address: the .10 of the service range, as bootstrap.sh derives it from serviceIpv4Cidr
    (`${SERVICE_IPV4_CIDR%.*}.10`: awslabs/amazon-eks-ami templates/al2/runtime/bootstrap.sh@0ab84280 lines
    467-470), where EKS's kube-dns service takes its ClusterIP."""
    try:
        network = ipaddress.IPv4Network(service_cidr)
    except ValueError as error:
        raise BootstrapError(f"eks.service_cidr: {service_cidr!r} is not an IPv4 range ({error})") from None
    if network.num_addresses < 16:
        raise BootstrapError(f"eks.service_cidr: {service_cidr} is too small to hold the cluster DNS address (.10)")
    return str(network.network_address + 10)


@dataclass(frozen=True)
class EksNode:
    """What a node of one group joins with: the cluster (resolved values) and what its kubelet registers."""

    cluster_name: str
    endpoint: str
    certificate_authority: str
    """base64 PEM, as aws.eks.Cluster.certificate_authority.data gives it."""
    service_cidr: str
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[tuple[str, str, str], ...] = ()
    """(key, value, effect); value may be empty."""
    efa: bool = False
    """The node's pods use EFA: containerd runs with unlimited locked memory (CONTAINERD_MEMLOCK_DROP_IN)."""

    def __post_init__(self) -> None:
        for name in ("cluster_name", "endpoint", "certificate_authority"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip() or any(c.isspace() for c in value.strip()):
                raise BootstrapError(f"eks.{name}: must be one non-empty word, got {value!r}")
        if not self.endpoint.startswith("https://"):
            raise BootstrapError(f"eks.endpoint: must be the API server's https:// URL, got {self.endpoint!r}")
        dns_cluster_ip(self.service_cidr)
        refused = sorted(key for key in self.labels if not kubelet_may_set(key))
        if refused:
            raise BootstrapError(
                f"labels: {', '.join(refused)} cannot be set by a node's kubelet (NodeRestriction allows "
                f"kubernetes.io/ and k8s.io/ labels only under {' or '.join(KUBELET_NAMESPACES)}, and none under "
                f"{RESTRICTED_NAMESPACE}); use a prefix of your own, e.g. example.com/"
            )
        for key, value in self.labels.items():
            if "," in key + value or "=" in key + value:
                raise BootstrapError(f"labels[{key}]: ',' and '=' are not allowed in a label")
            if not re.fullmatch(LABEL_VALUE, value):
                raise BootstrapError(f"labels[{key}]: {value!r} is no label value (at most 63 characters: letters, "
                                     "digits, '-', '_', '.', beginning and ending with a letter or digit)")

    def label_arg(self) -> str:
        """--node-labels' value: k=v pairs, comma separated, in key order."""
        return ",".join(f"{key}={value}" for key, value in sorted(self.labels.items()))

    def taint_arg(self) -> str:
        """--register-with-taints' value: key=value:Effect (key:Effect without a value), comma separated."""
        return ",".join(f"{key}={value}:{effect}" if value else f"{key}:{effect}" for key, value, effect in self.taints)


def _settings(node: EksNode) -> str:
    values = {
        "GPUFLEET_EKS_CLUSTER": node.cluster_name,
        "GPUFLEET_EKS_ENDPOINT": node.endpoint,
        "GPUFLEET_EKS_CA": node.certificate_authority.strip(),
        "GPUFLEET_EKS_DNS_IP": dns_cluster_ip(node.service_cidr),
        "GPUFLEET_EKS_LABELS": node.label_arg(),
        "GPUFLEET_EKS_TAINTS": node.taint_arg(),
        "GPUFLEET_EKS_RESTART_CONTAINERD": "true" if node.efa else "false",
    }
    lines = ["# shellcheck shell=bash disable=SC2034", "# gpufleet EKS join settings, rendered by components.bootstrap"]
    return "\n".join([*lines, *(f"{key}={shlex.quote(value)}" for key, value in values.items())]) + "\n"


def eks_cloud_config(user_data: str, node: EksNode) -> str:
    """The group's cloud-config (as render_user_data made it) with the join added, as text."""
    if not user_data.startswith("#cloud-config\n"):
        raise BootstrapError("user data: not a #cloud-config document")
    document = yaml.load(user_data, Loader=SAFE_LOADER)
    document["write_files"] += [
        _file(f"{ETC}/eks.env", _settings(node), "0600"),
        _packed_file(f"{SBIN}/gpufleet-eks-join", node_script("eks-join.sh"), "0755"),
        _file(f"{UNITS}/{JOIN_UNIT}", node_script(JOIN_UNIT), "0644"),
        *(_file(f"{UNITS}/{unit}.d/gpufleet-node-check.conf", KUBELET_DROP_IN, "0644") for unit in KUBELET_UNITS),
        *([_file(*CONTAINERD_MEMLOCK_DROP_IN, "0644")] if node.efa else []),
    ]
    add_unit(document["runcmd"], "enable", JOIN_UNIT)
    add_unit(document["runcmd"], "start", JOIN_UNIT)
    return "#cloud-config\n" + yaml.dump(document, Dumper=_LiteralDumper, sort_keys=False, width=1000)


def eks_user_data(user_data: str, node: EksNode, node_group: str) -> bytes:
    """The EKS node's user data: the cloud-config with the join, gzipped (mtime 0: the same bytes every render);
    BootstrapError when even compressed it is over EC2's limit."""
    return gzip_user_data(eks_cloud_config(user_data, node), "aws", f"node group {node_group}",
                          "shorten checkpoint_hook, labels or the fallback types")
