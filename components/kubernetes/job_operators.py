"""The job operators a stack asks for (`scheduler.job_operators`), on EKS, AKS and ACK alike: the MPI Operator
(MPIJob v2beta1, manifests/mpi-operator.yaml) and the Training Operator v1 for PyTorchJob
(manifests/training-operator.yaml), each at the release its manifest was rendered from and the image the lock pins.

Both controllers run on the system group (the untainted CPU nodes every cluster has), selected by the label the
stack sets on those nodes, so they start before any GPU node exists and never take a GPU node's room.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpufleet.lock.kubernetes_components import ComponentPin, KubernetesComponents
from gpufleet.stackfile.scheduler import SYSTEM_NODE_LABELS

from .manifests import Obj, find, pod_spec, read_manifest

# scheduler.job_operators value -> (manifest, the Deployment it runs, the lock's component, the image key).
OPERATORS = {
    "mpi": ("mpi-operator", "mpi-operator", "mpi_operator", "mpi-operator"),
    "training": ("training-operator", "training-operator", "training_operator", "training-operator"),
}
# The Training Operator reconciles only the schemes it is told to (cmd/training-operator.v1/main.go:91 at v1.9.0,
# --enable-scheme); the manifest keeps only the PyTorchJob CRD, whose webhook is the only one kept (the others
# name kinds no CRD serves here).
TRAINING_SCHEME = "pytorchjob"
TRAINING_WEBHOOK = "validator.pytorchjob.training-operator.kubeflow.org"


def operator_objects(operator: str, pins: KubernetesComponents) -> list[Obj]:
    """One operator's objects, its controller on the system group at the lock's image (ValueError naming an unknown
    operator)."""
    if operator not in OPERATORS:
        raise ValueError(f"scheduler.job_operators: {operator!r} is not one of {', '.join(OPERATORS)}")
    manifest, deployment_name, component, image_key = OPERATORS[operator]
    pin: ComponentPin = getattr(pins, component)
    objects = read_manifest(manifest).fresh()
    spec = pod_spec(find(objects, "Deployment", deployment_name))
    spec["nodeSelector"] = {**spec.get("nodeSelector", {}), **SYSTEM_NODE_LABELS}
    container = spec["containers"][0]
    container["image"] = pin.images[image_key].reference
    if operator == "training":
        container["args"] = [f"--enable-scheme={TRAINING_SCHEME}"]
        # The webhook certificate's Secret is rendered with `data: {}`, which the API server stores as no data; the
        # operator's cert-controller writes the certificate into it. pulumi_kubernetes would send the empty map as a
        # secret value, so it is left out.
        find(objects, "Secret", "training-operator-webhook-cert").pop("data", None)
        webhook = find(objects, "ValidatingWebhookConfiguration", "validator.training-operator.kubeflow.org")
        webhook["webhooks"] = [hook for hook in webhook["webhooks"] if hook["name"] == TRAINING_WEBHOOK]
    return objects


def job_operator_objects(operators: Iterable[str], pins: KubernetesComponents) -> list[tuple[str, list[Obj]]]:
    """(component, objects) per operator asked for, in the order asked."""
    found = []
    for name in operators:
        objects = operator_objects(name, pins)
        found.append((OPERATORS[name][0], objects))
    return found
