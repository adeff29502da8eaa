"""AWS credentials and Regions for the command: the environment's or a profile's, checked
where they enter (a profile the AWS config lacks, an account of the wrong form), read lazily so
a command that needs no AWS starts without boto3."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Sequence
from typing import Any

from gpu_pool.cli.errors import CliError


def configured_region() -> str | None:
    """The region of the AWS config and environment (AWS_REGION, AWS_DEFAULT_REGION, the
    profile), as the AWS CLI and CDK CLI take it; None when there is none, or when the AWS config
    cannot be read (AWS_PROFILE naming no profile): the advice then says REGION."""
    import boto3
    from botocore.exceptions import BotoCoreError

    try:
        region = os.environ.get("AWS_REGION") or boto3.Session().region_name
    except BotoCoreError:
        return None
    return str(region) if region else None


def aws_clients(region: str | None) -> Callable[[str], Any] | None:
    """A boto3 client factory, or None when there are no credentials or region, or the AWS
    config cannot be read (AWS_PROFILE naming no profile)."""
    return aws_clients_of_profile(None, region)


def aws_clients_of_profile(profile: str | None, region: str | None) -> Callable[[str], Any] | None:
    """_aws with the credentials of `profile` (None: the environment's)."""
    import boto3
    from botocore.exceptions import BotoCoreError

    try:
        session = boto3.Session(profile_name=profile, region_name=region)
        if session.get_credentials() is None or session.region_name is None:
            return None
    except BotoCoreError:
        return None
    client: Callable[[str], Any] = session.client
    return client


def account_profiles(values: Sequence[str]) -> dict[str, str]:
    """--account-profile ACCOUNT=PROFILE, repeated: account id -> profile."""
    profiles: dict[str, str] = {}
    for value in values:
        account, _, profile = value.partition("=")
        if not (len(account) == 12 and account.isdigit() and profile):
            raise CliError(
                f"--account-profile: '{value}': give ACCOUNT=PROFILE, ACCOUNT a 12-digit AWS "
                "account id and PROFILE a profile of the AWS config"
            )
        if profiles.setdefault(account, profile) != profile:
            raise CliError(
                f"--account-profile: account {account} is given two profiles "
                f"({profiles[account]}, {profile}); give one"
            )
    return profiles


def check_profiles_exist(profile: str | None, account_profiles: Collection[str]) -> None:
    """Every profile named on the command line is one of the AWS config's: otherwise each
    cluster would only be reported unreachable, and the bad name never said (#39 item 3)."""
    import boto3
    from botocore.exceptions import BotoCoreError

    named = [p for p in (profile, *account_profiles) if p]
    if not named:
        return
    try:
        known = set(boto3.Session().available_profiles)
    except BotoCoreError:
        known = set()
    for name in named:
        if name not in known:
            option = "--profile" if name == profile else "--account-profile"
            listed = ", ".join(sorted(known)) or "none"
            raise CliError(
                f"{option}: no AWS profile named '{name}' in the AWS config (its profiles: "
                f"{listed}); aws configure list-profiles lists them"
            )
