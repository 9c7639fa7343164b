"""Table lifecycle, the shared connection, and transactional writes with typed failures.

Writes go through :func:`transact`, a ``TransactWriteItems`` built with PynamoDB's
``TransactWrite``. DynamoDB rejects a contended transaction with ``TransactionConflict``
(the service does, DynamoDB Local never does); :func:`transact` rebuilds and retries those
(:mod:`domain.store.retry`) before giving up with :class:`~domain.store.retry.Contended`. A
failed condition is raised as :class:`ConditionFailed` carrying, per action, the stored item
when the action asked for ``ALL_OLD`` — that is how CONFLICT embeds the current state without
a read (docs/data-model.md, "Optimistic concurrency"). Store errors stay store errors; the tool
boundary maps them to the envelope.

:func:`use` is the one way to point the store at an endpoint (DynamoDB Local, or AWS), used by
the CLI, the stdio adapter, the ephemeral stack and the tests alike.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from pynamodb.connection import Connection
from pynamodb.exceptions import TransactWriteError
from pynamodb.transactions import TransactWrite

from domain import settings as _settings_module
from domain.settings import Settings
from domain.settings import settings as _settings
from domain.store import activity, deadline, witness
from domain.store.errors import StoreError
from domain.store.models import Row
from domain.store.retry import ATTEMPTS, Contended, conflict_backoff

_dynamodb_client: Any = None
_on_reconfigure: list[Callable[[], None]] = []


def on_reconfigure(callback: Callable[[], None]) -> None:
    """Run ``callback`` whenever :func:`use` points the store elsewhere (caches keyed by table)."""
    _on_reconfigure.append(callback)


def use(
    endpoint: str | None,
    *,
    table: str | None = None,
    idempotency_table: str | None = None,
    region: str | None = None,
) -> Settings:
    """Point settings, the models, the boto3 client and every registered cache at ``endpoint``.

    ``endpoint=None`` means DynamoDB in AWS (callers decide whether that is allowed). The
    values are also written to the environment, so child processes inherit them.
    """
    if endpoint:
        os.environ["JENTRIX_DYNAMODB_ENDPOINT"] = endpoint
    else:
        os.environ.pop("JENTRIX_DYNAMODB_ENDPOINT", None)
    for name, value in (
        ("JENTRIX_TABLE", table),
        ("JENTRIX_IDEMPOTENCY_TABLE", idempotency_table),
        ("AWS_REGION", region),
    ):
        if value:
            os.environ[name] = value
    cfg = _settings_module.reload()
    configure(cfg)
    for callback in _on_reconfigure:
        callback()
    return cfg


def configure(cfg: Settings | None = None) -> None:
    """Point the models and the boto3 client at ``cfg`` (endpoint, region, table)."""
    global _dynamodb_client
    cfg = cfg or _settings
    if cfg.endpoint:
        # DynamoDB Local accepts any credentials; never fall through to a real profile.
        os.environ.setdefault("AWS_ACCESS_KEY_ID", "local")
        os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "local")
    Row.Meta.table_name = cfg.table
    Row.Meta.host = cfg.endpoint
    Row.Meta.region = cfg.region
    # Bounded waits on both clients, so a dead or stalled DynamoDB answers within the Lambda timeout.
    Row.Meta.connect_timeout_seconds, Row.Meta.read_timeout_seconds = (
        cfg.dynamodb_connect_timeout,
        cfg.dynamodb_read_timeout,
    )
    Row.Meta.max_retry_attempts = cfg.dynamodb_max_attempts - 1  # PynamoDB counts retries, not attempts
    Row.Meta.max_pool_connections = 32  # the I/O pool (domain.store.parallel) sends up to 16 requests at once
    # PynamoDB caches a TableConnection on whichever model class is used first; drop every
    # cached one so all models share a single connection (and a single botocore client).
    stack = [Row]
    while stack:
        cls = stack.pop()
        if "_connection" in cls.__dict__ and cls is not Row:
            delattr(cls, "_connection")
        stack.extend(cls.__subclasses__())
    Row._connection = None  # noqa: SLF001 - PynamoDB caches it on the class
    # One botocore client for everything (models, transactions, Powertools, table admin), built
    # here — at import in Lambda's init phase — rather than inside the first request. PynamoDB
    # builds it from the Meta settings above (timeouts, attempts, pool size).
    _dynamodb_client = Row._get_connection().connection.client  # noqa: SLF001 - no public accessor
    deadline.install(_dynamodb_client)  # every request checks the call's deadline (domain.store.deadline)


def connection() -> Connection:
    """The PynamoDB ``Connection`` every model operation and transaction uses."""
    return Row._get_connection().connection  # noqa: SLF001 - no public accessor


def dynamodb_client() -> Any:
    """The DynamoDB client every request goes through (PynamoDB's botocore client, shared with
    Powertools idempotency and table administration)."""
    if _dynamodb_client is None:
        configure()
    return _dynamodb_client


def table_name() -> str:
    """The application table's name as configured (:func:`use`, :func:`configure`)."""
    return str(Row.Meta.table_name)


def botocore_clients() -> list[Any]:
    """Every botocore client that talks to DynamoDB for a request (request counting in tests)."""
    clients = [connection().client, dynamodb_client()]
    return [c for i, c in enumerate(clients) if all(c is not other for other in clients[:i])]


class ConditionFailed(StoreError):
    """A transaction was cancelled because one or more condition expressions failed.

    ``failed`` maps the ``(PK, SK)`` of every action whose condition failed to the stored item
    (raw DynamoDB JSON) when that action asked for ``ALL_OLD``, else ``None``. Actions are
    identified by key, not by position: PynamoDB regroups actions by type before sending them.
    """

    def __init__(self, failed: dict[tuple[str, str], dict[str, Any] | None]) -> None:
        super().__init__(f"condition failed on {sorted(failed)}")
        self.failed = failed

    def hit(self, pk: str, sk: str) -> bool:
        return (pk, sk) in self.failed

    def item(self, pk: str, sk: str) -> dict[str, Any] | None:
        return self.failed.get((pk, sk))


class Missing(StoreError):
    """A write's guard failed because an item it depends on is gone: the workspace membership,
    the board, the column or the entity itself. Tools answer it as NOT_FOUND of their target."""

    answer = "not_found"


def _key(attrs: dict[str, Any]) -> tuple[str, str]:
    return attrs["PK"]["S"], attrs["SK"]["S"]


def _action_keys(tx: TransactWrite) -> list[tuple[str, str]]:
    """The keys of the actions in the order PynamoDB sends them (checks, deletes, puts, updates)."""
    keys = [_key(kw["Key"]) for kw in tx._condition_check_items + tx._delete_items]  # noqa: SLF001
    keys += [_key(kw["Item"]) for kw in tx._put_items]  # noqa: SLF001
    keys += [_key(kw["Key"]) for kw in tx._update_items]  # noqa: SLF001
    return keys


_commit_hooks: list[Callable[[TransactWrite], None]] = []


def on_commit(callback: Callable[[TransactWrite], None]) -> None:
    """Run ``callback(tx)`` after every committed transaction (the search index follows the
    pending markers a transaction carried; it must not raise). Registering the same callback
    twice keeps one registration."""
    if callback not in _commit_hooks:
        _commit_hooks.append(callback)


_commit_span: Callable[[int], Any] | None = None


def trace_commits(span: Callable[[int], Any] | None) -> None:
    """Wrap every ``TransactWriteItems`` in ``span(attempt)`` (a context manager; the tracer's
    subsegment, installed by :mod:`domain.observability`)."""
    global _commit_span
    _commit_span = span


MIRROR_ATTEMPTS = 8  # resends of one transaction whose only failed condition was a recent-activity item's


def transact(build: Callable[[TransactWrite], None]) -> None:
    """Run one ``TransactWriteItems`` built by ``build``; retry contention; map condition failures.

    Every activity row of a task that ``build`` puts also updates the task's recent item in the
    same transaction (:func:`domain.store.activity.mirror`), and every write of a task's full
    item stamps a fresh freshness witness on it and on that recent item
    (:func:`domain.store.witness.stamp`; docs/data-model.md, "Freshness witness"). When that item is full, its failed
    condition returns it and the transaction is sent again trimming it; such resends do not
    count as contention, and a caller never sees the item's key in :class:`ConditionFailed`.

    Raises:
        ConditionFailed: a condition expression failed (no write happened).
        Contended: ``TransactionConflict`` on every attempt of the "transaction" budget.
    """
    attempts = ATTEMPTS["transaction"]
    known: dict[tuple[str, str], dict[str, Any] | None] = {}
    attempt = mirror_resends = 0
    while attempt < attempts:
        deadline.check("a transaction attempt")
        tx = TransactWrite(connection=connection())
        build(tx)
        recent = activity.mirror(tx, known, witness.stamp(tx))
        try:
            if _commit_span is None:
                tx._commit()  # noqa: SLF001 - the context manager form would hide the retry loop
            else:
                with _commit_span(attempt):
                    tx._commit()  # noqa: SLF001
            activity.committed(tx)  # the recent items as written: the next full one trims without failing first
            for hook in _commit_hooks:
                hook(tx)
            return
        except TransactWriteError as exc:
            reasons = list(exc.cancellation_reasons or [])
            codes = [r.code if r else "None" for r in reasons]
            if any(c == "ConditionalCheckFailed" for c in codes):
                keys = _action_keys(tx)
                failed = {
                    keys[i]: r.raw_item
                    for i, r in enumerate(reasons)
                    if r is not None and r.code == "ConditionalCheckFailed"
                }
                if set(failed) <= recent and mirror_resends < MIRROR_ATTEMPTS:
                    known.update(failed)  # full (or trimmed meanwhile): send again with what it holds
                    mirror_resends += 1
                    continue
                raise ConditionFailed({k: v for k, v in failed.items() if k not in recent} or failed) from exc
            # Not exc.cause_response_code: it raises AttributeError when the cause is a timeout or a
            # dropped connection (botocore's HTTPClientError carries response=None).
            response = getattr(exc.cause, "response", None)
            code = ((response or {}).get("Error") or {}).get("Code") if isinstance(response, dict) else None
            if any(c == "TransactionConflict" for c in codes) or code == "TransactionConflictException":
                if attempt + 1 < attempts:
                    conflict_backoff(attempt)
                attempt += 1
                continue
            raise
    raise Contended("transaction", attempts)


def _ensure_ttl(client: Any, table: str, attribute: str) -> None:
    desc = client.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
    if desc.get("TimeToLiveStatus") in ("ENABLED", "ENABLING"):
        return
    client.update_time_to_live(TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": attribute})


def _create_idempotency_table(client: Any, name: str) -> None:
    """The Powertools idempotency table: ``id`` as its partition key, on demand."""
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )


def create_tables(cfg: Settings | None = None) -> list[str]:
    """Create the application and idempotency tables when absent; return the names created."""
    cfg = cfg or _settings
    configure(cfg)
    client = dynamodb_client()
    existing = set(client.list_tables()["TableNames"])
    created = []
    if cfg.table not in existing:
        Row.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
        created.append(cfg.table)
    _ensure_ttl(client, cfg.table, "ttl")
    if cfg.idempotency_table not in existing:
        _create_idempotency_table(client, cfg.idempotency_table)
        client.get_waiter("table_exists").wait(TableName=cfg.idempotency_table)
        created.append(cfg.idempotency_table)
    _ensure_ttl(client, cfg.idempotency_table, "expiration")
    return created


def create_fresh_tables(table: str, idempotency_table: str) -> None:
    """Create both tables in an emulator known to be empty (the ephemeral stack): in parallel,
    without ``ListTables`` and without waiters, since a fresh in-memory DynamoDB Local makes a
    table ACTIVE before ``CreateTable`` returns. The tables are the ones :func:`create_tables`
    builds (tests/test_ephemeral.py compares them). ``table`` must be the configured one."""
    from concurrent.futures import ThreadPoolExecutor

    if table != Row.Meta.table_name:
        raise ValueError(f"configure the store for {table!r} first (db.use)")
    client = dynamodb_client()

    def app() -> None:
        Row.create_table(billing_mode="PAY_PER_REQUEST", wait=False)
        _ensure_ttl(client, table, "ttl")

    def replays() -> None:
        _create_idempotency_table(client, idempotency_table)
        _ensure_ttl(client, idempotency_table, "expiration")

    with ThreadPoolExecutor(max_workers=2) as pool:
        for job in [pool.submit(app), pool.submit(replays)]:
            job.result()


def delete_tables(cfg: Settings | None = None) -> None:
    cfg = cfg or _settings
    client = dynamodb_client()
    for name in (cfg.table, cfg.idempotency_table):
        try:
            client.delete_table(TableName=name)
        except client.exceptions.ResourceNotFoundException:
            pass
