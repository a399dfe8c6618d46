"""The scrape job that takes the DCGM exporter's metrics into Azure Monitor's managed Prometheus on AKS.

The add-on's agent scrapes only its default targets until a ConfigMap named ama-metrics-prometheus-config in
kube-system gives it more, as a Prometheus configuration under the key `prometheus-config`; the agent reads no
operator CRDs (MicrosoftDocs/azure-docs articles/azure-monitor/containers/prometheus-metrics-scrape-validate.md and
prometheus-metrics-scrape-configuration.md: jobs in this ConfigMap run from the add-on's replica pod). The job finds
the exporter's pods (dcgm.py: namespace, label, port `metrics`) and labels each series with its node, which the
alert rules select a pool by (components/clouds/azure/aks_monitoring.py).
"""

from __future__ import annotations

import yaml

from gpufleet.yaml_libyaml import SAFE_DUMPER

from .dcgm import NAME, NAMESPACE
from .manifests import Obj

CONFIG_MAP = "ama-metrics-prometheus-config"
KEY = "prometheus-config"
SCRAPE_INTERVAL = "30s"


def scrape_job() -> dict[str, object]:
    """The DCGM exporter's pods, their `metrics` port, each series labelled with the pod's node."""
    return {
        "job_name": NAME,
        "scrape_interval": SCRAPE_INTERVAL,
        "kubernetes_sd_configs": [{"role": "pod", "namespaces": {"names": [NAMESPACE]}}],
        "relabel_configs": [
            {"source_labels": ["__meta_kubernetes_pod_label_app_kubernetes_io_name"], "regex": NAME,
             "action": "keep"},
            {"source_labels": ["__meta_kubernetes_pod_container_port_name"], "regex": "metrics", "action": "keep"},
            {"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "node", "action": "replace"},
        ],
    }


def scrape_config() -> Obj:
    """The add-on's custom scrape ConfigMap with the DCGM job."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": CONFIG_MAP, "namespace": "kube-system"},
            "data": {KEY: yaml.dump({"scrape_configs": [scrape_job()]}, Dumper=SAFE_DUMPER, sort_keys=False)}}
