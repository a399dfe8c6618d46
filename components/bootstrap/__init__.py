"""Node bootstrap shared by all clouds: cloud-init user data for one node group.

``render_user_data(cfg)`` returns a single ``#cloud-config`` document. On the node it writes:

- ``/etc/gpufleet/expect.json``: what ``gpufleet-nodecheck`` expects (profile, driver, cuda,
  fabric_manager, scratch_mount or null, and per instance type gpu_model, gpu_count, nvswitch,
  fabric, fabric_interfaces), sorted keys;
- ``/etc/gpufleet/bootstrap.env``: the shell-quoted settings the scripts source;
- ``gpufleet-scratch.service`` (scratch raid0 only): at every boot stripes the local NVMe disks
  (AWS instance store, Azure NVMe Direct Disks, Alibaba NVMe disks that are not cloud disks)
  into RAID0, or uses the single one, formats XFS once and mounts at scratch_mount. No fstab
  entry: local disks can come back blank after a stop, and the unit rebuilds them;
- ``gpufleet-health.service``: runs ``gpufleet-nodecheck --expect /etc/gpufleet/expect.json
  --format json`` after nvidia-persistenced and the fabric manager, result in
  /run/gpufleet/nodecheck.json; drift is checked again every node_check_retry_interval seconds for
  node_check_retry_seconds. On AWS groups with a lifecycle hook it completes the launch action with
  CONTINUE, or ABANDON on failure (IMDSv2; the image must carry the AWS CLI). On every cloud a
  failed check touches /run/gpufleet/unhealthy and
  fails the unit: workload units declare ``Requires=gpufleet-health.service`` and
  ``After=gpufleet-health.service`` and so never start on a bad node. Where the cloud hands the
  lifecycle action token to a notification target only (Alibaba Cloud ESS), the launch hook is
  completed from outside instead: ``gate_command`` (gate.py) is what the cloud's run-command service
  runs on the new node, waiting for this unit's result and checking the node again;
- MIG groups only: ``gpufleet-mig`` runs first in gpufleet-health.service (a drop-in), at every boot: enables MIG
  mode (rebooting once where the change waits for a GPU reset) and creates the group's MIG devices on every GPU;
  the node check counts them (expect.json ``mig_devices`` per GPU). Why each step: mig.py;
- ``gpufleet-spot-watcher.service``: polls the cloud's interruption notices every 5 s and runs
  checkpoint_hook at most once per kind of notice (rebalance, interruption), for at most
  checkpoint_grace_seconds (on AWS the terminate hook's timeout); on AWS, when the
  ASG moves the instance to Terminated it completes the terminate hook with CONTINUE after the
  checkpoint; on Azure it acknowledges the Preempt event after the checkpoint. Where a removal reaches the node
  only through the scale-in hook's runbook (Alibaba Cloud ESS), ``checkpoint_command`` (gate.py) is what the
  cloud's run-command service runs on the node: the same checkpoint, once per node whoever asks first.
"""

from .cloud_init import expect_document, render_user_data, user_data_limit
from .config import BootstrapConfig, ExpectedType, LifecycleHooks
from .errors import BootstrapError
from .gate import checkpoint_command, gate_command
from .mig import MigLayout

__all__ = [
    "LifecycleHooks",
    "MigLayout",
    "checkpoint_command",
    "BootstrapConfig",
    "BootstrapError",
    "ExpectedType",
    "expect_document",
    "gate_command",
    "render_user_data",
    "user_data_limit",
]
