"""Where the access step found a call's target: plain values the call context hands to handlers.

:class:`Located` is one located target (``ctx.target``); :class:`ItemAccess` is the outcome of
one item of a list target (``ctx.targets``). They live in this leaf module (it imports only ids
and errors) so that :mod:`domain.context` can type what it carries without importing the access
step or the target declarations, which both name the context. :mod:`domain.targets` and
:mod:`domain.access` re-export them under their old names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from domain import ids
from domain.errors import ToolError

if TYPE_CHECKING:
    from domain.store.reads import Reads

_T = TypeVar("_T")


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

    # The part a spec's target kind always sets, typed: a handler of a task tool reads
    # ``where.board()`` rather than the optional ``board_id``. Asking a target for a part its
    # kind does not carry is a programming error (the spec and the handler disagree), never a
    # caller's, so it raises LookupError, which the pipeline answers as INTERNAL.
    def board(self) -> str:
        """The board id (task, column, label, subtask, comment and board targets)."""
        return _part(self, "board_id", self.board_id)

    def column(self) -> str:
        """The column id (task and column targets)."""
        return _part(self, "column_id", self.column_id)

    def project(self) -> str:
        """The project id (project targets)."""
        return _part(self, "project_id", self.project_id)

    def task_ref(self) -> ids.TaskRef:
        """The task's reference (task, subtask and comment targets)."""
        return _part(self, "task", self.task)

    def session_ref(self) -> ids.SessionRef:
        """The session's reference (session targets)."""
        return _part(self, "session", self.session)


def _part(where: Located, name: str, value: _T | None) -> _T:
    if value is None:
        raise LookupError(
            f"a {where.kind} target ({where.ident}) carries no {name}; the spec's target kind and its handler disagree"
        )
    return value


@dataclass
class ItemAccess:
    """The outcome of one list-target item: ``where`` when admitted, else ``error``; ``read`` the
    spec's named read plans for this item (``entry.read.task``), read with the memberships."""

    index: int
    ident: Any
    where: Located | None = None
    error: ToolError | None = None
    read: Reads | None = None  # set by the access step when the spec declares reads

    def located(self) -> Located:
        """``where`` of an admitted item (one whose ``error`` is ``None``).

        Raises:
            LookupError: for a refused item (a programming error: check ``error`` first).
        """
        return _part_of_item(self, "where", self.where)

    def reads(self) -> Reads:
        """``read`` of an admitted item of a spec that declares read plans.

        Raises:
            LookupError: when the item was refused or the spec declares no reads (a programming error).
        """
        return _part_of_item(self, "read", self.read)


def _part_of_item(entry: ItemAccess, name: str, value: _T | None) -> _T:
    if value is None:
        raise LookupError(
            f"list item {entry.index} ({entry.ident!r}) has no {name}: it was refused, or the spec reads none"
        )
    return value
