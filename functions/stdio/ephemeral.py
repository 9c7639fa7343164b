"""``--ephemeral``: a throwaway DynamoDB Local (in memory), tables, a user, a workspace and a token.

Everything lives in the child DynamoDB Local process, which :meth:`EphemeralStack.close` stops,
so nothing is left behind at exit. For offline tests and CI of client integrations.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from infra.ddb_local import DynamoDBLocal

log = logging.getLogger("jentrix.stdio")


@dataclass
class Seed:
    user_id: str
    workspace_id: str
    token: str


class EphemeralStack:
    def __init__(self) -> None:
        self.ddb = DynamoDBLocal(in_memory=True)
        self.seed: Seed | None = None

    def start(self) -> Seed:
        from domain import auth
        from domain.store import db
        from domain.store import workspaces as workspace_store

        endpoint = self.ddb.start()
        os.environ.update({"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local"})
        db.use(endpoint, table="jentrix-ephemeral", idempotency_table="jentrix-ephemeral-idempotency")
        db.create_tables()
        user = auth.create_user("ephemeral@jentrix.invalid", "Ephemeral User")
        ws, _ = workspace_store.create(user, "Ephemeral")
        secret, _ = auth.mint_pat(user.userId, display_name="jentrix mcp --ephemeral")
        self.seed = Seed(user.userId, ws.workspaceId, secret)
        log.info("ephemeral stack: DynamoDB Local at %s, user %s, workspace %s", endpoint, user.userId, ws.workspaceId)
        return self.seed

    def close(self) -> None:
        self.ddb.stop()
        log.info("ephemeral stack removed")
