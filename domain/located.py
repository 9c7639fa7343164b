"""Where the access step found a call's target: plain values the call context hands to handlers.

:class:`Located` is one located target (``ctx.target``); :class:`ItemAccess` is the outcome of
one item of a list target (``ctx.targets``). They live in this leaf module (it imports only ids
and errors) so that :mod:`domain.context` can type what it carries without importing the access
step or the target declarations, which both name the context. :mod:`domain.targets` and
:mod:`domain.access` re-export them under their old names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from domain import ids
from domain.errors import ToolError

if TYPE_CHECKING:
    from domain.store.reads import Reads


@dataclass(frozen=True)
class Located:
    """Where a target lives, read from its id: the workspace, and the board/column/task when the
    id names them. ``kind``/``ident`` word the NOT_FOUND a missing or invisible target gets."""

    kind: str
    ident: str
    workspace_id: str
    board_id: str | None = None
    column_id: str | None = None
    label_id: str | None = None
    project_id: str | None = None
    task: ids.TaskRef | None = None
    comment: ids.CommentRef | None = None
    subtask: ids.SubtaskRef | None = None
    invitation: ids.InvitationRef | None = None
    session: ids.SessionRef | None = None
    artifact: ids.ArtifactRef | None = None


@dataclass
class ItemAccess:
    """The outcome of one list-target item: ``where`` when admitted, else ``error``; ``read`` the
    spec's named read plans for this item (``entry.read.task``), read with the memberships."""

    index: int
    ident: Any
    where: Located | None = None
    error: ToolError | None = None
    read: Reads | None = None  # set by the access step when the spec declares reads
