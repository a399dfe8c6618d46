"""EFA launch-template interface layout for an instance type (AWS EC2 user guide, efa-acc-inst-types).

One interface per network card, cards 0..N-1. Card 0 carries device index 0, the primary `efa`
interface; the other cards carry `efa-only` interfaces (no IP address, supported by
terraform-provider-aws >= 5.74, which pulumi-aws 7 builds on) at device index 0 when the card
takes one interface. Without RDMA a node gets one plain ENA interface.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.catalog import InstanceType


@dataclass(frozen=True)
class InterfaceSlot:
    network_card_index: int
    device_index: int
    interface_type: str | None  # None: a plain ENA interface

    @property
    def primary(self) -> bool:
        """The instance's primary interface (card 0, device 0)."""
        return (self.network_card_index, self.device_index) == (0, 0)

    @property
    def takes_address(self) -> bool:
        return self.interface_type != "efa-only"


def interface_layout(instance: InstanceType, rdma: bool) -> list[InterfaceSlot]:
    if not rdma or instance.fabric.kind != "efa" or instance.fabric.interfaces == 0:
        return [InterfaceSlot(0, 0, None)]
    return [InterfaceSlot(0, 0, "efa")] + [
        InterfaceSlot(card, 0, "efa-only") for card in range(1, instance.fabric.interfaces)
    ]


def addresses_per_node(instance: InstanceType, rdma: bool) -> int:
    return sum(slot.takes_address for slot in interface_layout(instance, rdma))
