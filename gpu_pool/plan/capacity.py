"""A training pool's capacity, resolved once: reserved capacity (an ODCR or a Capacity Block
for ML) and EFA, in the forms each provisioner takes.

Managed node groups (EKS UG ml/capacity-blocks-mng, launch-templates): the launch template's
CapacityReservationSpecification, for a Capacity Block InstanceMarketOptions MarketType
capacity-block with the one instance type in the template and node group capacity type
CAPACITY_BLOCK; EFA as one interface per network card, device index 0 on card 0 and 1 on the
others (EKS UG ml/node-efa), or on a type EC2 lays out otherwise (p6e-gb200) an ENA primary
and EFA-only interfaces on the cards the catalog names (EC2 UG efa-acc-inst-types).
Karpenter (aws/karpenter-provider-aws v1.14.1, concepts/nodeclasses.md, tasks/odcrs):
capacityReservationSelectorTerms and capacity type `reserved`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpu_pool.settings import PoolSettings
from gpu_pool.settings.pool import CapacityReservationSettings

# Interface type of every EFA interface in a node group's template. `efa-only` (no IP address)
# needs VPC CNI 1.18.5 or newer and is never allowed on card 0; `efa` works with every CNI the
# supported EKS versions ship, so it is used on every card (EKS UG ml/node-efa), except on a
# type whose EFA cards take EFA-only interfaces alone (catalog efa_cards_by_size).
EFA_INTERFACE_TYPE = "efa"
EFA_ONLY_INTERFACE_TYPE = "efa-only"
# The primary interface of such a type: card 0, ENA only.
ENA_INTERFACE_TYPE = "interface"


@dataclass(frozen=True)
class CapacityPlan:
    """How a pool's nodes get their capacity and network: reserved or not, EFA or not."""

    # The reservation the nodes launch into; None: none (absent from a pool record's JSON).
    reservation: CapacityReservationSettings | None = None
    # EFA interfaces per node (one per network card); 0: no EFA.
    efa_interfaces: int = 0
    # The cards of EFA-only interfaces beside an ENA primary on card 0, for a type EC2 lays out
    # so (catalog efa_cards_by_size); None: one EFA interface on each card from card 0.
    efa_cards: tuple[int, ...] | None = None

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
        card 0 and 1 on the others; or, on a type with `efa_cards`, the ENA primary on card 0
        and an EFA-only interface at device index 0 of each of those cards (EC2 UG
        efa-acc-inst-types). Each in `security_group_ids`; no subnet (a managed node group's
        template may not name one). Empty without EFA."""
        if not self.efa:
            return []
        if self.efa_cards is None:
            return [
                _interface(card, 0 if card == 0 else 1, EFA_INTERFACE_TYPE, security_group_ids)
                for card in range(self.efa_interfaces)
            ]
        return [
            _interface(0, 0, ENA_INTERFACE_TYPE, security_group_ids),
            *(
                _interface(card, 0, EFA_ONLY_INTERFACE_TYPE, security_group_ids)
                for card in self.efa_cards
            ),
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


def _interface(
    card: int, device: int, interface_type: str, security_group_ids: Sequence[str]
) -> dict[str, Any]:
    return {
        "NetworkCardIndex": card,
        "DeviceIndex": device,
        "InterfaceType": interface_type,
        "Groups": list(security_group_ids),
        "DeleteOnTermination": True,
    }


@dataclass(frozen=True)
class ReservationFacts:
    """A reservation as EC2 describes it: where it is, what it holds, how many."""

    reservation_id: str
    zone: str
    instance_type: str
    count: int


def capacity_plan(
    settings: PoolSettings, efa_interfaces: int, efa_cards: tuple[int, ...] = ()
) -> CapacityPlan:
    """The pool's capacity; `efa_interfaces` and `efa_cards` are its instance type's (catalog
    GpuInstanceType; unused unless `efa`)."""
    if not settings.efa:
        return CapacityPlan(settings.capacity_reservation)
    return CapacityPlan(settings.capacity_reservation, efa_interfaces, efa_cards or None)
