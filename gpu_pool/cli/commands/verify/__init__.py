"""`gpu-pool verify`: launch the smoke-test pod on a pool and follow it, stage by stage, to
Succeeded (verifier.py beside this runs the stages)."""

from __future__ import annotations

import argparse

from gpu_pool.cli.command import Command, Services
from gpu_pool.cli.credentials import aws_clients
from gpu_pool.cli.kube import add_cluster_options, kubernetes_clients, located
from gpu_pool.cli.pool_options import (
    add_pool_options,
    add_source_options,
    chosen_resource,
    pools_of,
)

# Each stage's timeout option and its default, in seconds.
STAGE_TIMEOUTS = (
    ("scale-up", 180),
    ("node-join", 600),
    ("node-ready", 300),
    ("gpu", 300),
    ("run", 900),
)


def add_options(command: argparse.ArgumentParser) -> None:
    add_source_options(command)
    add_pool_options(command)
    add_cluster_options(command)
    command.add_argument("--namespace", default="default")
    for stage, default in STAGE_TIMEOUTS:
        command.add_argument(
            f"--{stage}-timeout",
            type=float,
            default=default,
            metavar="SECONDS",
            help=f"default {default}",
        )
    command.add_argument("--poll-interval", type=float, default=5.0, metavar="SECONDS")


def run(args: argparse.Namespace, services: Services) -> int:
    from gpu_pool.cli.commands.verify.state import Timeouts
    from gpu_pool.cli.commands.verify.verifier import Verifier

    pools = pools_of(args, services.aws)
    pool = pools.pool(args.pool)
    resource = chosen_resource(pool, args.resource)
    cluster = located(args, pools.cluster(pool), pools.account(pool))
    core, apps, custom = kubernetes_clients(args, cluster)
    aws = services.aws or aws_clients(cluster[1])
    timeouts = Timeouts(
        scale_up=args.scale_up_timeout,
        node_join=args.node_join_timeout,
        node_ready=args.node_ready_timeout,
        gpu=args.gpu_timeout,
        run=args.run_timeout,
        poll=args.poll_interval,
    )
    verifier = Verifier(
        core,
        apps,
        pool,
        cluster[0],
        args.namespace,
        timeouts,
        autoscaling=aws("autoscaling") if aws else None,
        custom=custom,
        clock=services.clock,
        resource=resource,
        # Only a pool reserved by id has a reservation to read.
        ec2=aws("ec2") if aws and pool.reservation_id else None,
    )
    return verifier.run()


COMMAND = Command(
    "verify", "launch the smoke-test pod and follow it to Succeeded", add_options, run
)
