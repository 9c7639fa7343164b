"""The dev stack's seed: one dev user, its "Dev Workspace" and a full-scope token.

Seeding is idempotent, so ``jentrix dev`` can run it on every start against a persistent data
dir: the user is found through its email claim item (``dev@jentrix.local``), and the
workspace id is derived from the user id, so a restart finds both with one read each instead
of creating look-alikes. The token secret is never stored in the table (only its digest); to
keep a pasted client config working across restarts, the secret is kept in ``token_file``
(mode 0600, next to the data) and reused while it still authenticates. Without a file (an
in-memory stack) a fresh token is minted each start.

The dev token is an agent's (``holder`` agent), as a client pasted from the banner is one. What
only a person may do (approve an agent's parked membership change, print an invitation link,
``resolve_projects_for_repo``) takes a human token: with ``human_token_file`` (``jentrix dev``
passes ``<data dir>/dev-human-token``) one is minted for the dev user, kept and reused the same
way, so the approval flow works on a fresh stack without another command.
"""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from domain import auth
from domain.store import workspaces as workspace_store
from domain.store.models import UserRow, WorkspaceRow

DEV_EMAIL = "dev@jentrix.local"
DEV_NAME = "Dev User"
DEV_WORKSPACE = "Dev Workspace"
DEV_TOKEN_NAME = "jentrix dev"
DEV_HUMAN_TOKEN_NAME = "jentrix dev (human)"
FULL_SCOPES = ["read", "write", "admin"]


@dataclass(frozen=True)
class DevSeed:
    user: UserRow
    workspace: WorkspaceRow
    token: str
    token_reused: bool
    user_created: bool
    workspace_created: bool
    human_token: str | None = None  # with ``human_token_file``: the dev user's human token


def dev_workspace_id(user_id: str) -> str:
    """A stable ``ws_…`` id for the dev user's workspace (same alphabet as :mod:`domain.ids`)."""
    digest = hashlib.sha256(f"dev-workspace\x1f{user_id}".encode()).digest()
    return "ws_" + base64.b32encode(digest).decode().lower()[:12]


def ensure_user(email: str, display_name: str) -> tuple[UserRow, bool]:
    """The user with ``email``, created when missing; ``(user, created)``."""
    existing = auth.user_by_email(email)
    if existing is not None:
        return existing, False
    try:
        return auth.create_user(email, display_name), True
    except auth.EmailTaken:  # created concurrently: use theirs
        user = auth.user_by_email(email)
        assert user is not None
        return user, False


def ensure_dev_workspace(user: UserRow) -> tuple[WorkspaceRow, bool]:
    ws_id = dev_workspace_id(user.userId)
    found = workspace_store.get(ws_id)
    if found is not None:
        return found, False
    return workspace_store.create(user, DEV_WORKSPACE, workspace_id=ws_id)


def _saved_token(token_file: Path | None, user_id: str, *, human: bool = False) -> str | None:
    if token_file is None or not token_file.is_file():
        return None
    secret = token_file.read_text(encoding="utf-8").strip()
    principal = auth.authenticate(secret)
    if principal is None or principal.user_id != user_id or principal.workspace_pin or principal.human != human:
        return None
    if not principal.allows("admin"):
        return None
    return secret


def _save_token(token_file: Path, secret: str) -> None:
    token_file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(secret + "\n")


def seed_dev(
    token_file: Path | None = None, *, email: str = DEV_EMAIL, human_token_file: Path | None = None
) -> DevSeed:
    """Make sure the dev user, workspace and a full-scope token exist (and, with
    ``human_token_file``, a full-scope human token kept in that file); tables must exist already."""
    user, user_created = ensure_user(email, DEV_NAME)
    workspace, ws_created = ensure_dev_workspace(user)
    secret = _saved_token(token_file, user.userId)
    reused = secret is not None
    if secret is None:
        secret, _ = auth.mint_pat(user.userId, scopes=FULL_SCOPES, display_name=DEV_TOKEN_NAME)
        if token_file is not None:
            _save_token(token_file, secret)
    human = None
    if human_token_file is not None:
        human = _saved_token(human_token_file, user.userId, human=True)
        if human is None:
            human, _ = auth.mint_pat(user.userId, scopes=FULL_SCOPES, display_name=DEV_HUMAN_TOKEN_NAME, holder="human")
            _save_token(human_token_file, human)
    return DevSeed(user, workspace, secret, reused, user_created, ws_created, human)
