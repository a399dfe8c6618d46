"""One node group: one VM scale set and its autoscale setting.

Orchestration: an InfiniBand group is Uniform (Flexible has no InfiniBand) with singlePlacementGroup, so all
its VMs share one IB fabric; no overprovisioning (extra VMs would join the fabric and vanish) and a Manual
upgrade policy (a model change never reimages a running training node). Every other group is Flexible:
Azure's mode for new scale sets. No priority mix: a Spot scale set gets no terminate notification, so a Regular
base is a node group of its own (rules.capacity_fits_orchestration).
Node count lives in `sku.capacity`, which the autoscale setting owns once the scale set exists.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

import pulumi
from pulumi_azure_native import compute, monitor

from gpufleet.stackfile.models import NodeGroup

from ...bootstrap.operations import GPU_UTILISATION_CUSTOM_METRIC
from .alarms import idle_rule
from .identity import METRICS_NAMESPACE
from .lifecycle import HEALTH_EXTENSION, REPAIR_GRACE, TerminateNotice, health_settings
from .metric_seed import seed_metric

ADMIN_USER = "gpufleet"
FLEXIBLE_NETWORK_API = "2020-11-01"  # Flexible scale sets create NICs through this Network API version
NO_PRICE_EVICTION = -1  # Spot max price -1: evicted for capacity only, never for price
# How long Azure keeps trying to restore an evicted Spot VM (Spot Try & Restore): the documented example's hour
# (virtual-machine-scale-sets/use-spot.md, ms.date 2025-04-01, `--spot-restore-timeout PT1H`); no maximum found.
SPOT_RESTORE_TIMEOUT = "PT1H"


@dataclass(frozen=True)
class NodeGroupArgs:
    """Inputs of AzureNodeGroup."""

    group: NodeGroup
    """The validated node group from the stack file."""
    rdma: bool
    """InfiniBand in use: Uniform, singlePlacementGroup."""
    scale_set_name: str
    """Explicit scale set name, known to policies and the bootstrap before it exists."""
    resource_group_name: pulumi.Input[str]
    location: str
    zones: list[str]
    """The group's zones; empty = regional."""
    image: compute.ImageReferenceArgs | None
    """The locked image; None while the profile is unbaked (the plan shows it, a real deploy is refused)."""
    subnet_id: pulumi.Input[str]
    identity_id: pulumi.Input[str]
    """The nodes' user-assigned identity."""
    disk_encryption_set_id: pulumi.Input[str]
    """The DES every disk references."""
    disk_key_access: pulumi.Resource
    """The wait after the DES's role on the key: disks cannot be created before the role has propagated."""
    root_volume_gb: int
    encryption_at_host: bool
    user_data: pulumi.Input[str]
    """Rendered cloud-init, sent as customData (an output where it names a resource of the same run: the file
    system)."""
    admin_ssh_public_key: str | None
    terminate_notice: TerminateNotice
    tags: dict[str, str]
    image_tags: dict[str, str]
    """Scale-set tags naming the image profile and its lock status (gpufleet.lock.status)."""
    deployer: tuple[pulumi.Input[str], str]
    """Who runs the deploy (getClientConfig's objectId, identity.deployer_principal_type): with `idle` it seeds the
    metric the rule reads."""
    subscription_id: pulumi.Input[str]
    application_security_group_id: pulumi.Input[str] | None = None
    """scheduler slurm: the nodes' application security group, the source the head node's rules admit."""


def _os_disk(args: NodeGroupArgs, uniform: bool) -> compute.VirtualMachineScaleSetOSDiskArgs:
    return compute.VirtualMachineScaleSetOSDiskArgs(
        create_option="FromImage",
        os_type="Linux",
        caching="ReadWrite",
        disk_size_gb=args.root_volume_gb,
        # Flexible only (the API documents osDisk.deleteOption for Flexible scale sets; Uniform deletes with the VM).
        delete_option=None if uniform else "Delete",
        managed_disk=compute.VirtualMachineScaleSetManagedDiskParametersArgs(
            storage_account_type="Premium_LRS",
            disk_encryption_set=compute.DiskEncryptionSetParametersArgs(id=args.disk_encryption_set_id),
        ),
    )


def _network(args: NodeGroupArgs, uniform: bool) -> compute.VirtualMachineScaleSetNetworkProfileArgs:
    return compute.VirtualMachineScaleSetNetworkProfileArgs(
        network_api_version=None if uniform else FLEXIBLE_NETWORK_API,
        network_interface_configurations=[
            compute.VirtualMachineScaleSetNetworkConfigurationArgs(
                name="nic",
                primary=True,
                enable_accelerated_networking=True,
                delete_option=None if uniform else "Delete",
                ip_configurations=[
                    # No public_ip_address_configuration: nodes get no public IP; egress is the NAT gateway.
                    compute.VirtualMachineScaleSetIPConfigurationArgs(
                        name="ipconfig", primary=True, subnet=compute.ApiEntityReferenceArgs(id=args.subnet_id),
                        application_security_groups=[compute.SubResourceArgs(id=args.application_security_group_id)]
                        if args.application_security_group_id
                        else None,
                    )
                ],
            )
        ],
    )


def admin_linux_configuration(admin_ssh_public_key: str | None) -> compute.LinuxConfigurationArgs:
    """No password; the admin's key where Azure's Linux agent writes it (a scale set's VMs and the Slurm head)."""
    keys = (
        [compute.SshPublicKeyArgs(path=f"/home/{ADMIN_USER}/.ssh/authorized_keys",  # machine-path-ok
                                  key_data=admin_ssh_public_key)]
        if admin_ssh_public_key
        else []
    )
    return compute.LinuxConfigurationArgs(
        disable_password_authentication=True, ssh=compute.SshConfigurationArgs(public_keys=keys)
    )


def _os_profile(args: NodeGroupArgs) -> compute.VirtualMachineScaleSetOSProfileArgs:
    return compute.VirtualMachineScaleSetOSProfileArgs(
        computer_name_prefix=args.group.name[:15],
        admin_username=ADMIN_USER,
        custom_data=pulumi.Output.from_input(args.user_data).apply(
            lambda text: base64.b64encode(text.encode()).decode()
        ),
        linux_configuration=admin_linux_configuration(args.admin_ssh_public_key),
    )


def _vm_profile(args: NodeGroupArgs) -> compute.VirtualMachineScaleSetVMProfileArgs:
    """What every VM of the set runs: image and disks, network, OS, priority, reservation, terminate notice and the
    health extension."""
    group, uniform = args.group, args.rdma
    spot = group.spot
    return compute.VirtualMachineScaleSetVMProfileArgs(
        storage_profile=compute.VirtualMachineScaleSetStorageProfileArgs(
            image_reference=args.image, os_disk=_os_disk(args, uniform)
        ),
        network_profile=_network(args, uniform),
        os_profile=_os_profile(args),
        security_profile=compute.SecurityProfileArgs(encryption_at_host=args.encryption_at_host),
        diagnostics_profile=compute.DiagnosticsProfileArgs(
            boot_diagnostics=compute.BootDiagnosticsArgs(enabled=True)  # managed storage: no account to secure
        ),
        priority="Spot" if spot else "Regular",
        eviction_policy="Delete" if spot else None,
        billing_profile=compute.BillingProfileArgs(max_price=group.spot_max_price or NO_PRICE_EVICTION)
        if spot
        else None,
        capacity_reservation=compute.CapacityReservationProfileArgs(
            capacity_reservation_group=compute.SubResourceArgs(id=group.reservation_id)
        )
        if group.capacity == "reservation"
        else None,
        # Azure allows no terminate notification on Spot VMs: they get the Preempt event instead.
        scheduled_events_profile=None
        if spot
        else compute.ScheduledEventsProfileArgs(
            terminate_notification_profile=compute.TerminateNotificationProfileArgs(
                enable=True, not_before_timeout=args.terminate_notice.not_before_timeout
            )
        ),
        extension_profile=compute.VirtualMachineScaleSetExtensionProfileArgs(
            extensions=[
                compute.VirtualMachineScaleSetExtensionArgs(
                    name="health",
                    publisher=HEALTH_EXTENSION["publisher"],
                    type=HEALTH_EXTENSION["type"],
                    type_handler_version=HEALTH_EXTENSION["version"],
                    auto_upgrade_minor_version=True,
                    settings=health_settings(),
                )
            ]
        ),
    )


class AzureNodeGroup(pulumi.ComponentResource):
    """One scale set (Uniform for InfiniBand, Flexible otherwise) and the autoscale setting that sizes it."""

    scale_set_id: pulumi.Output[str]
    scale_set_name: pulumi.Output[str]

    def __init__(self, name: str, args: NodeGroupArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:azure:NodeGroup", name, None, opts)
        # A Spot group without `idle` keeps its count through Spot Try & Restore, which autoscale would disable.
        restores = args.group.spot and args.group.idle is None
        scale_set = self._scale_set(name, args, restores)
        if not restores:
            self._autoscale(name, args, scale_set)
        self.scale_set_id = scale_set.id
        self.scale_set_name = scale_set.name
        self.register_outputs({"scale_set_id": self.scale_set_id, "scale_set_name": self.scale_set_name})

    def _scale_set(self, name: str, args: NodeGroupArgs, restores: bool) -> compute.VirtualMachineScaleSet:
        """The scale set: Uniform with one placement group for InfiniBand, Flexible otherwise; automatic repairs;
        Spot Try & Restore where `restores`."""
        group, uniform = args.group, args.rdma
        spot = group.spot
        return compute.VirtualMachineScaleSet(
            f"{name}-vmss",
            vm_scale_set_name=args.scale_set_name,
            resource_group_name=args.resource_group_name,
            location=args.location,
            zones=args.zones or None,
            orchestration_mode="Uniform" if uniform else "Flexible",
            single_placement_group=True if uniform else None,
            overprovision=False if uniform else None,
            upgrade_policy=compute.UpgradePolicyArgs(mode="Manual") if uniform else None,
            # One fault domain: required for Spot in a Uniform set; GPU VMs then get Scheduled Events for
            # themselves only.
            platform_fault_domain_count=1 if spot or not uniform else None,
            sku=compute.SkuArgs(name=group.instance_types[0], tier="Standard", capacity=group.size.desired),
            identity=compute.VirtualMachineScaleSetIdentityArgs(
                type="UserAssigned", user_assigned_identities=[args.identity_id]
            ),
            virtual_machine_profile=_vm_profile(args),
            # A node that fails the node check reports Unhealthy and is replaced after the grace period.
            automatic_repairs_policy=compute.AutomaticRepairsPolicyArgs(
                enabled=True, grace_period=REPAIR_GRACE, repair_action="Replace"
            ),
            # Spot with eviction Delete: an evicted VM leaves the count, and `pulumi up` ignores capacity. Without
            # `idle`, Azure restores it (Spot Try & Restore keeps the target count, use-spot.md), which autoscale
            # would disable, so such a group has no autoscale setting (below).
            spot_restore_policy=compute.SpotRestorePolicyArgs(enabled=True, restore_timeout=SPOT_RESTORE_TIMEOUT)
            if restores
            else None,
            tags={**args.tags, **args.image_tags},
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[args.disk_key_access], ignore_changes=["sku.capacity"]
            ),
        )

    def _autoscale(self, name: str, args: NodeGroupArgs, scale_set: compute.VirtualMachineScaleSet) -> None:
        """Bounds, and with `idle` the scale-in rule. A Spot group with `idle` keeps autoscale, and with it no Try
        & Restore: autoscale cannot tell an eviction from an idle scale-in (a rule back to `desired` would undo
        every idle scale-in), so capacity an eviction took comes back only when the job scheduler or operator
        scales out, as it does after an idle scale-in."""
        group = args.group
        idle = group.idle
        # Autoscale refuses a rule on a custom metric that was never published: the deploy seeds it first.
        seed = seed_metric(
            name, scale_set.id, GPU_UTILISATION_CUSTOM_METRIC, METRICS_NAMESPACE, args.location,
            args.deployer, args.subscription_id, pulumi.ResourceOptions(parent=self),
        ) if idle else None
        monitor.AutoscaleSetting(
            f"{name}-autoscale",
            resource_group_name=args.resource_group_name,
            location=args.location,
            target_resource_uri=scale_set.id,
            enabled=True,
            # GPU jobs scale out by the scheduler's queue, which sets capacity inside these bounds; `idle` adds the
            # one metric rule, scaling in to the minimum. With it the default is the minimum: autoscale raises a
            # set to its default when the metric is missing, as it is from a set scaled to zero.
            profiles=[
                monitor.AutoscaleProfileArgs(
                    name="bounds",
                    capacity=monitor.ScaleCapacityArgs(
                        minimum=str(group.size.min),
                        default=str(group.size.min if idle else group.size.desired),
                        maximum=str(group.size.max),
                    ),
                    rules=[idle_rule(scale_set.id, idle)] if idle else [],
                )
            ],
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[seed] if seed else None),
        )
