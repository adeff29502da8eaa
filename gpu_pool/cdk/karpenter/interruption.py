"""The interruption queue: EC2 and AWS Health events Karpenter acts on before a node is lost.

Karpenter's getting-started CloudFormation (v1.14): an SQS queue keeping messages 300 s (an
interruption notice is useless later), encrypted with SQS-managed keys, and five EventBridge
rules sending it Spot interruption warnings, rebalance recommendations, instance state changes,
scheduled AWS Health events and Capacity Reservation interruption warnings.

What Karpenter v1.14.1 does with each (aws/karpenter-provider-aws
pkg/controllers/interruption/utils.go actionForMessage): it taints, drains and deletes the node,
launching a replacement, on a Spot interruption warning, an EC2 scheduled change, an instance
stopping/stopped/shutting-down/terminated, and a Capacity Reservation interruption warning. A
rebalance recommendation only records a Kubernetes event on the node: nothing is drained early
(website/content/en/docs/concepts/disruption.md, "Interruption").
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from gpu_pool.cdk.nag.acknowledge import acknowledge
from gpu_pool.model.karpenter_api import INTERRUPTION_EVENTS, MESSAGE_RETENTION_SECONDS


class InterruptionQueue(Construct):
    """The queue (`queue`) and the rules that feed it."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.queue = sqs.Queue(
            self,
            "Queue",
            retention_period=Duration.seconds(MESSAGE_RETENTION_SECONDS),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            # Denies every request not made over TLS, as upstream's DenyHTTP statement does.
            enforce_ssl=True,
        )
        acknowledge(
            self.queue,
            "AwsSolutions-SQS3",
            "an interruption notice is useless after its 300 s retention; a dead-letter queue "
            "would only keep stale events",
        )
        for construct_id_, (source, detail_type) in INTERRUPTION_EVENTS.items():
            events.Rule(
                self,
                construct_id_,
                description=f"{detail_type} events for Karpenter",
                event_pattern=events.EventPattern(source=[source], detail_type=[detail_type]),
                # Adds the queue policy statement: events.amazonaws.com may send, from this
                # rule only.
                targets=[targets.SqsQueue(self.queue)],
            )
