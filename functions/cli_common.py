"""What every ``jentrix`` command module shares: the failure type, the table and S3 flags, and
connecting to DynamoDB and S3 the way the flags say (``--endpoint``, ``--aws``, the environment,
else the dev stack's local services).

``functions/cli.py`` builds the parser and runs the commands; its command modules
(``cli_governance``, ``cli_artifacts``, …) import what they share from here, never ``cli``
itself, so no module of the CLI imports one that imports it back.
"""

from __future__ import annotations

import argparse
import os
from urllib.parse import urlsplit

DEFAULT_DYNAMODB_PORT = 8000  # DynamoDB Local's customary port; fixed so client configs survive restarts
DEFAULT_DYNAMODB_ENDPOINT = f"http://127.0.0.1:{DEFAULT_DYNAMODB_PORT}"  # where `jentrix dev` puts it
DEFAULT_S3_PORT = 8788  # the local S3's port (infra.s3_local.DEFAULT_PORT); fixed like DynamoDB Local's
DEFAULT_S3_ENDPOINT = f"http://127.0.0.1:{DEFAULT_S3_PORT}"  # where `jentrix dev` runs its local S3


class CliError(Exception):
    """A user-facing failure: printed as one line on stderr, exit status ``code``."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def sentence(message: str, hint: str = "") -> str:
    """``message`` and ``hint`` of an envelope as one line: "a: b is not accepted. Accepted: x, y."."""
    message, hint = (message or "").strip(), (hint or "").strip()
    if not hint:
        return message
    return f"{message if message.endswith(('.', '!', '?', ':', ';')) else message + '.'} {hint}"


def point_at(
    endpoint: str | None, *, table: str | None = None, idempotency_table: str | None = None, region: str | None = None
) -> None:
    """Point settings, the store and idempotency at ``endpoint`` (``None`` = real AWS)."""
    from domain.store import db

    if endpoint:
        # DynamoDB Local takes any credentials; a profile left in the shell (perhaps one this
        # machine does not even have) must neither be used nor break the command.
        os.environ.pop("AWS_PROFILE", None)
        os.environ.pop("AWS_DEFAULT_PROFILE", None)
    db.use(endpoint, table=table, idempotency_table=idempotency_table, region=region)


def add_target_flags(p: argparse.ArgumentParser) -> None:
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--endpoint",
        metavar="URL",
        help=f"DynamoDB endpoint, e.g. the one `jentrix dev` prints (default: $JENTRIX_DYNAMODB_ENDPOINT, else {DEFAULT_DYNAMODB_ENDPOINT})",
    )
    where.add_argument("--aws", action="store_true", help="use real AWS with the ambient credentials (never implied)")
    p.add_argument("--table", help="application table name (default: $JENTRIX_TABLE or 'jentrix')")
    p.add_argument(
        "--region",
        help="AWS region (with --aws, default: the region of your AWS profile or $AWS_REGION / $AWS_DEFAULT_REGION)",
    )


def is_aws_host(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host.endswith((".amazonaws.com", ".amazonaws.com.cn", ".api.aws"))


target: dict[str, str] = {}  # the endpoint the token commands use and where it came from (error messages)


def pick_endpoint(
    aws: bool, flag: str | None, flag_name: str, env: str, default: str, dev_service: str
) -> tuple[str | None, str]:
    """``(endpoint, where it came from)``: ``--aws`` (no endpoint: the service in AWS), else the
    flag, else the environment variable, else ``default`` (where `jentrix dev` runs ``dev_service``)."""
    if aws:
        return None, "--aws"
    if flag:
        return flag, flag_name
    if os.environ.get(env):
        return os.environ[env], env
    return default, f"the default, where `jentrix dev` runs {dev_service}"


def aws_region(args: argparse.Namespace) -> str | None:
    """With --aws: --region, else the region boto3 resolves for the ambient profile
    (AWS_REGION, AWS_DEFAULT_REGION, the profile's config), which is where `sam deploy` with the
    same profile put the stack. Never a silent us-east-1.

    Raises:
        CliError: no region anywhere."""
    if args.region:
        return args.region
    import boto3

    region = boto3.session.Session().region_name
    if not region:
        raise CliError(
            "--aws needs a region: pass --region (the stack's), or set AWS_REGION or a region in your AWS profile.",
            code=2,
        )
    return region


def connect(args: argparse.Namespace) -> None:
    if getattr(args, "aws", False):
        args.region = aws_region(args)
    endpoint, source = pick_endpoint(
        args.aws, args.endpoint, "--endpoint", "JENTRIX_DYNAMODB_ENDPOINT", DEFAULT_DYNAMODB_ENDPOINT, "DynamoDB Local"
    )
    target.update(endpoint=endpoint or "DynamoDB in AWS", source=source)
    if endpoint and is_aws_host(endpoint):
        raise CliError(
            f"{endpoint} is DynamoDB in AWS; use --aws (with --region) instead of an endpoint to say so explicitly.",
            code=2,
        )
    point_at(endpoint, table=args.table, region=args.region)


s3_target: dict[str, str] = {}  # the S3 endpoint an upload uses and where it came from (error messages)


def add_s3_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--s3-endpoint",
        metavar="URL",
        help=f"S3 endpoint, e.g. the one `jentrix dev` prints (default: $JENTRIX_S3_ENDPOINT, else {DEFAULT_S3_ENDPOINT}; with --aws: S3 in AWS)",
    )


def connect_s3(args: argparse.Namespace) -> None:
    """Point the object store at the S3 an in-process upload uses, the way :func:`connect`
    picks DynamoDB: ``--s3-endpoint``, else ``$JENTRIX_S3_ENDPOINT``, else the dev stack's local
    S3 (:data:`DEFAULT_S3_ENDPOINT`); S3 in AWS only with ``--aws``."""
    from domain import objects
    from domain import settings as settings_module

    endpoint, source = pick_endpoint(
        getattr(args, "aws", False),
        getattr(args, "s3_endpoint", None),
        "--s3-endpoint",
        "JENTRIX_S3_ENDPOINT",
        DEFAULT_S3_ENDPOINT,
        "its local S3",
    )
    s3_target.update(endpoint=endpoint or "S3 in AWS", source=source)
    if endpoint:
        os.environ["JENTRIX_S3_ENDPOINT"] = endpoint
    else:
        os.environ.pop("JENTRIX_S3_ENDPOINT", None)
    settings_module.reload()
    objects.reset()


def s3_unreachable(what: str) -> CliError:
    """The failure of an upload's PUT, naming the S3 endpoint tried and the flag to change."""
    where = s3_target.get("endpoint")
    if where is None:  # over --url: the server chose the object store
        return CliError(what)
    if where == "S3 in AWS":
        return CliError(
            f"{what}; the object store was S3 in AWS (--aws): check the region, your network and credentials."
        )
    return CliError(
        f"{what}; the object store was {where} ({s3_target['source']}): start `jentrix dev`, or pass --s3-endpoint URL (or --aws)."
    )
