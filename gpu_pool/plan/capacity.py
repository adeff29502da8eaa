"""A training pool's capacity, resolved once: reserved capacity (an ODCR or a Capacity Block
for ML) and EFA, in the forms each provisioner takes.

Managed node groups (EKS UG ml/capacity-blocks-mng, launch-templates): the launch template's
CapacityReservationSpecification, for a Capacity Block InstanceMarketOptions MarketType
capacity-block with the one instance type in the template and node group capacity type
CAPACITY_BLOCK; EFA as one interface per network card, device index 0 on card 0 and 1 on the
others (EKS UG ml/node-efa). Karpenter (aws/karpenter-provider-aws v1.14.1, concepts/
nodeclasses.md, tasks/odcrs): capacityReservationSelectorTerms and capacity type `reserved`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpu_pool.settings import PoolSettings
from gpu_pool.settings.models import CapacityReservationSettings

# Interface type of every EFA interface in a node group's template. `efa-only` (no IP address)
# needs VPC CNI 1.18.5 or newer and is never allowed on card 0; `efa` works with every CNI the
# supported EKS versions ship, so it is used on every card (EKS UG ml/node-efa).
EFA_INTERFACE_TYPE = "efa"


@dataclass(frozen=True)
class CapacityPlan:
    """How a pool's nodes get their capacity and network: reserved or not, EFA or not."""

    # The reservation the nodes launch into; None: none (absent from a pool record's JSON).
    reservation: CapacityReservationSettings | None = None
    # EFA interfaces per node (one per network card); 0: no EFA.
    efa_interfaces: int = 0

    @property
    def reserved(self) -> bool:
        return self.reservation is not None

    @property
    def capacity_block(self) -> bool:
        return self.reservation is not None and self.reservation.capacity_block

    @property
    def efa(self) -> bool:
        return self.efa_interfaces > 0

    @property
    def own_placement_group(self) -> bool:
        """Whether the pool gets a cluster placement group of its own: an EFA pool outside
        reserved capacity. A Capacity Block's instances are placed together already, and a
        placement group can fail their launches while the block has room (EC2 UG
        capacity-blocks-using; AWS ParallelCluster's PlacementGroupCapacityTypeValidator); an
        ODCR serves only launches into the placement group it was created in (EC2 UG cr-cpg),
        which the reservation's `placement_group` names."""
        return self.efa and self.reservation is None

    @property
    def reservation_placement_group(self) -> str | None:
        """The existing placement group the reservation lives in, by name; None: none."""
        return None if self.reservation is None else self.reservation.placement_group

    def node_group_capacity_type(self, capacity_type: str) -> str:
        """AWS::EKS::Nodegroup CapacityType: CAPACITY_BLOCK for a block (the API refuses any
        other with a capacity-block template); ODCRs launch ON_DEMAND."""
        return "CAPACITY_BLOCK" if self.capacity_block else capacity_type

    def capacity_reservation_specification(self) -> dict[str, Any] | None:
        """Launch template CapacityReservationSpecification (CloudFormation spelling)."""
        reservation = self.reservation
        if reservation is None:
            return None
        if reservation.preference is not None:
            return {"CapacityReservationPreference": reservation.preference}
        if reservation.id is not None:
            # A launch into a full reservation fails: reserved only, with or without a preference.
            return {"CapacityReservationTarget": {"CapacityReservationId": reservation.id}}
        spec: dict[str, Any] = {
            "CapacityReservationTarget": {
                "CapacityReservationResourceGroupArn": reservation.resource_group_arn
            }
        }
        if reservation.fallback == "none":
            # A group target alone runs On-Demand when no reservation of the group has room;
            # capacity-reservations-only makes that launch fail instead (EC2 UG, "Launch
            # instances into Capacity Reservations in a group"). The two may be combined only
            # with that preference (EC2 API reference, CapacityReservationSpecification: "You
            # can only specify CapacityReservationPreference and CapacityReservationTarget if
            # the CapacityReservationPreference is capacity-reservations-only"); the older
            # launch template pages still say one option at a time.
            spec["CapacityReservationPreference"] = "capacity-reservations-only"
        return spec

    def instance_market_options(self) -> dict[str, Any] | None:
        """Launch template InstanceMarketOptions: capacity-block for a block, else none."""
        return {"MarketType": "capacity-block"} if self.capacity_block else None

    def network_interfaces(self, security_group_ids: Sequence[str]) -> list[dict[str, Any]]:
        """Launch template NetworkInterfaces for EFA: one per network card, device index 0 on
        card 0 and 1 on the others, each in `security_group_ids`; no subnet (a managed node
        group's template may not name one). Empty without EFA."""
        return [
            {
                "NetworkCardIndex": card,
                "DeviceIndex": 0 if card == 0 else 1,
                "InterfaceType": EFA_INTERFACE_TYPE,
                "Groups": list(security_group_ids),
                "DeleteOnTermination": True,
            }
            for card in range(self.efa_interfaces)
        ]

    def karpenter_capacity_types(self, capacity_type: str) -> list[str]:
        """NodePool `karpenter.sh/capacity-type` values: reserved (and on-demand with an ODCR's
        fallback), else the pool's own on-demand or spot."""
        if self.reservation is None:
            return [{"ON_DEMAND": "on-demand", "SPOT": "spot"}[capacity_type]]
        if self.reservation.fallback == "on-demand":
            return ["reserved", "on-demand"]
        return ["reserved"]

    def karpenter_reservation_terms(self) -> list[dict[str, str]]:
        """EC2NodeClass capacityReservationSelectorTerms: the reservation by id. Karpenter has
        no open matching nor resource groups (checks/reserved.py refuses those)."""
        if self.reservation is None or self.reservation.id is None:
            return []
        return [{"id": self.reservation.id}]


@dataclass(frozen=True)
class ReservationFacts:
    """A reservation as EC2 describes it: where it is, what it holds, how many."""

    reservation_id: str
    zone: str
    instance_type: str
    count: int


def capacity_plan(settings: PoolSettings, efa_interfaces: int) -> CapacityPlan:
    """The pool's capacity; `efa_interfaces` is its instance type's (0 unless `efa`)."""
    return CapacityPlan(settings.capacity_reservation, efa_interfaces if settings.efa else 0)
