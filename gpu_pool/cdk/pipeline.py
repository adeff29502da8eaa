"""GpuPoolPipeline: the fleet's deployment engine, a CDK Pipelines pipeline (docs/pipeline.md).

Source (a CodeConnections connection) -> synth -> self-mutation -> asset publishing -> one
wave after another; a wave deploys its clusters' stacks in parallel, and after each stack a
CodeBuild step runs `gpu-pool verify` on every pool of that cluster, so a failed smoke test
fails the wave and the next never starts.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from aws_cdk import Aws, Duration, Environment, Stack, Stage, pipelines
from aws_cdk import aws_codepipeline as codepipeline
from aws_cdk import aws_iam as iam
from constructs import Construct

from gpu_pool.cdk.arguments import check_arguments
from gpu_pool.cdk.cluster.verifier import (
    VERIFIER_ROLE_PATH,
    Verifier,
    bounded_role_name,
    verifier_role_name,
)
from gpu_pool.cdk.lookups.context import UNCHECKED_FAILS
from gpu_pool.cdk.nag.pipeline import acknowledge_pipeline, acknowledge_role_with_path
from gpu_pool.cdk.stack import GpuPoolStack
from gpu_pool.settings import AppSettings, ConfigError
from gpu_pool.settings.pipeline import PipelineSettings

# The profile the verify step's commands use: the verifier role, assumed with the CodeBuild
# project's own credentials (AWS CLI config credential_source EcsContainer, which CodeBuild's
# container credentials serve). Named on each command, not set for the whole build, so that
# `aws configure set` runs before the profile exists.
VERIFY_PROFILE = "gpu-pool-verify"

# The IAM path of the verify steps' roles in the pipeline's account; each cluster's verify role
# trusts its own step's role alone (verify_step_role_name).
VERIFY_STEP_ROLE_PATH = "/gpu-pool-verify-step/"

# How long one pool's verify may take at most: its default stage timeouts (cli/verify.py
# Timeouts: scale-up 3, node join 10, node ready 5, GPU 5, run 15 minutes) and a little more for
# the kubeconfig and the pod's deletion. The step's timeout is this per pool plus the install;
# CodeBuild's own default, an hour, would stop a cluster's second pool midway.
VERIFY_MINUTES_PER_POOL = 40
VERIFY_INSTALL_MINUTES = 10


class GpuPoolPipeline(Stack):
    """The pipeline stack, in the pipeline's account and Region. `clusters`: the fleet's
    settings, one GpuPoolStack each, in the waves `settings.waves` gives. Deploy it once with
    `cdk deploy`; with self-mutation (default) it updates itself from then on."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: PipelineSettings,
        clusters: Sequence[AppSettings],
    ) -> None:
        check_arguments(
            GpuPoolPipeline.__init__,
            {
                "scope": scope,
                "construct_id": construct_id,
                "settings": settings,
                "clusters": clusters,
            },
            owner=f"GpuPoolPipeline '{construct_id}'",
        )
        waves = settings.waves_of(list(clusters))
        super().__init__(
            scope,
            construct_id,
            env=Environment(account=settings.account, region=settings.region),
            stack_name=settings.stack_name,
        )
        self.settings = settings
        self.source = pipelines.CodePipelineSource.connection(
            settings.source.repository,
            settings.source.branch,
            connection_arn=settings.source.connection_arn,
        )
        directory = settings.directory.rstrip("/") or "."
        cross_account = any(c.account != settings.account for c in clusters)
        self.pipeline = pipelines.CodePipeline(
            self,
            "Pipeline",
            # V2: per-action billing and the current default (aws-codepipeline
            # defaultPipelineTypeToV2), whatever the app's feature flags say.
            pipeline_type=codepipeline.PipelineType.V2,
            synth=pipelines.ShellStep(
                "Synth",
                input=self.source,
                install_commands=settings.install_commands,
                commands=[*_in_directory(directory), *settings.synth_commands],
                primary_output_directory=_path(directory, "cdk.out"),
            ),
            # Customer-managed keys on the artifact bucket, which the cluster accounts' deploy
            # roles must read: needed across accounts only (and a key costs a month's fee).
            cross_account_keys=cross_account,
            # Yearly rotation of those keys, as cdk-nag asks (none without them).
            enable_key_rotation=cross_account or None,
            self_mutation=settings.self_mutation,
            # gpu-pool's assets are files (Lambda code, kubectl layers): no Docker anywhere.
            docker_enabled_for_synth=False,
            docker_enabled_for_self_mutation=False,
        )
        self.stacks: dict[str, GpuPoolStack] = {}
        self.verify_steps: list[pipelines.CodeBuildStep] = []
        problems: list[str] = []
        for number, wave_clusters in enumerate(waves, start=1):
            wave = self.pipeline.add_wave(f"Wave{number}")
            for cluster in wave_clusters:
                stage = Stage(
                    self,
                    cluster.stack_name,
                    env=Environment(account=cluster.account, region=cluster.region),
                )
                # The pipeline deploys what its synth step made, unreviewed: a fact that step
                # could not look up fails it (cdk/lookups/context.py).
                stage.node.set_context(UNCHECKED_FAILS, True)
                try:
                    stack = GpuPoolStack(
                        stage,
                        cluster.stack_name,
                        settings=cluster,
                        # The same stack a `cdk deploy` of the cluster's own app makes: a
                        # pipeline takes over deployed clusters instead of creating second ones.
                        stack_name=cluster.stack_name,
                        verifier=(
                            Verifier(
                                self._verify_step_principal(cluster), settings.verify_namespace
                            )
                            if settings.verify
                            else None
                        ),
                    )
                except ConfigError as err:
                    # Every cluster's errors together: one never hides another's.
                    problems += [f"{cluster.stack_name}: {line}" for line in str(err).splitlines()]
                    continue
                self.stacks[cluster.stack_name] = stack
                wave.add_stage(stage, post=self._verify_steps(cluster, stack))
        if problems:
            raise ConfigError("\n".join(problems))
        self.pipeline.build_pipeline()
        self._grant_connection()
        acknowledge_pipeline(self.pipeline)
        for step in self.verify_steps:
            acknowledge_role_with_path(step.project)

    def _grant_connection(self) -> None:
        """The source action's role may use the connection through the action of the ARN's own
        service prefix (Developer Tools console user guide, "Connections rename - Summary of
        changes": the prefix in a policy must match the resource's). aws-cdk-lib 2.275.0's
        CodeStarConnectionsSourceAction.bound grants codestar-connections:UseConnection alone,
        whatever the ARN, so a codeconnections ARN (the console's since July 2024) needs
        codeconnections:UseConnection here, on that connection only."""
        source = self.settings.source
        if source.connection_service == "codestar-connections":
            return
        stage = self.pipeline.pipeline.stages[0]
        (action,) = stage.actions
        role = (
            self.pipeline.pipeline.node.find_child(stage.stage_name)
            .node.find_child(action.action_properties.action_name)
            .node.find_child("CodePipelineActionRole")
        )
        if not isinstance(role, iam.Role):
            # aws-cdk-lib builds the source action's role as CodePipelineActionRole; a release
            # that stops doing so must fail the synth with the reason, not a traceback.
            raise ConfigError(
                "pipeline.source.connection_arn: aws-cdk-lib made the source action no role "
                "gpu-pool can grant codeconnections:UseConnection to (CodePipelineActionRole); "
                "use a codestar-connections ARN, or an aws-cdk-lib this gpu-pool supports"
            )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=[f"{source.connection_service}:UseConnection"],
                resources=[source.connection_arn],
            )
        )

    def verify_step_role_name(self, cluster: AppSettings) -> str:
        """The name of `cluster`'s verify step role, from the pipeline's and the cluster's stack
        names: the cluster's verify role trusts it by name, across accounts."""
        return bounded_role_name(f"{self.stack_name}-{cluster.stack_name}-step")

    def _verify_step_principal(self, cluster: AppSettings) -> iam.IPrincipal:
        """Who may assume `cluster`'s verify role: its own verify step alone, that step's role
        in the pipeline's account (aws:PrincipalArn is the caller's role ARN with its path), not
        another cluster's step nor any other principal of that account."""
        account = self.settings.account
        step_role = f"role{VERIFY_STEP_ROLE_PATH}{self.verify_step_role_name(cluster)}"
        return iam.AccountPrincipal(account).with_conditions(
            {"ArnEquals": {"aws:PrincipalArn": f"arn:{Aws.PARTITION}:iam::{account}:{step_role}"}}
        )

    def _verify_steps(self, cluster: AppSettings, stack: GpuPoolStack) -> list[pipelines.Step]:
        """The verify step of one cluster: assume its verifier role, write the kubeconfig,
        then verify each pool in turn; any non-zero exit fails the step and the wave."""
        if not self.settings.verify:
            return []
        region = cluster.region or ""
        pools = [pool.name for _, pool in cluster.pool_settings()]
        verify = [
            # The profile for the pool records (boto3) and the kubeconfig's token alike.
            f"AWS_PROFILE={VERIFY_PROFILE} gpu-pool verify --stack "
            f"{shlex.quote(cluster.stack_name)} --pool {shlex.quote(p)}"
            f" --namespace {shlex.quote(self.settings.verify_namespace)}"
            for p in pools
        ]
        step = pipelines.CodeBuildStep(
            f"Verify{cluster.stack_name}",
            input=self.source,
            # Its own role, the one its cluster's verify role trusts by name.
            role=iam.Role(
                self,
                f"Verify{cluster.stack_name}Role",
                assumed_by=iam.ServicePrincipal("codebuild.amazonaws.com"),
                path=VERIFY_STEP_ROLE_PATH,
                role_name=self.verify_step_role_name(cluster),
                description=f"gpu-pool verify step of stack {cluster.stack_name}",
            ),
            install_commands=self.settings.verify_install_commands,
            # The cluster's Region for the AWS CLI and boto3 alike (CodeBuild sets the
            # pipeline's as AWS_DEFAULT_REGION).
            env={
                "AWS_REGION": region,
                "AWS_DEFAULT_REGION": region,
            },
            env_from_cfn_outputs={"VERIFY_ROLE_ARN": stack.verifier.role_arn_output},
            commands=[
                f'aws configure set profile.{VERIFY_PROFILE}.role_arn "$VERIFY_ROLE_ARN"',
                f"aws configure set profile.{VERIFY_PROFILE}.credential_source EcsContainer",
                f"aws eks update-kubeconfig --name {shlex.quote(cluster.cluster.name)}"
                f" --region {region} --profile {VERIFY_PROFILE}",
                *verify,
            ],
            timeout=Duration.minutes(VERIFY_INSTALL_MINUTES + VERIFY_MINUTES_PER_POOL * len(pools)),
            role_policy_statements=[
                iam.PolicyStatement(
                    actions=["sts:AssumeRole"],
                    # Its own cluster's verify role alone, by the name that stack gives it.
                    resources=[
                        f"arn:{self.partition}:iam::{cluster.account}:role{VERIFIER_ROLE_PATH}"
                        f"{verifier_role_name(cluster.stack_name)}"
                    ],
                )
            ],
        )
        self.verify_steps.append(step)
        return [step]


def _in_directory(directory: str) -> list[str]:
    return [] if directory == "." else [f"cd {shlex.quote(directory)}"]


def _path(directory: str, name: str) -> str:
    return name if directory == "." else f"{directory}/{name}"
