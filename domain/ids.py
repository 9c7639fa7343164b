"""Entity identifiers that carry what authorization needs (docs/data-model.md, "Identifiers").

* workspace ``ws_<w>``                       — ``w``: 12 lowercase base32 characters
* board     ``bd_<w>_<b>``                   — the workspace is readable from the id
* column    ``cl_<w>_<b>_<c>``               — workspace and board readable
* task      ``tk_<w>_<b>_<number>``          — workspace, board and the per-workspace number
* comment   ``cm_<w>_<b>_<number>_<ulid>``   — its task, and its creation order (a lowercase ULID)
* attachment ``at_<w>_<b>_<number>_<ulid>``  — its task, and its upload order
* subtask   ``st_<w>_<b>_<number>_<ulid>``   — its task, and its place in the checklist (creation order)
* label     ``lb_<w>_<b>_<l>``               — workspace and board readable (like a column)
* project   ``pj_<w>_<p>``                   — the workspace is readable from the id (like a board)
* invitation ``inv_<w>_<ulid>``              — its workspace, and its creation order
* approval  ``ap_<w>_<request>_<ulid>``      — its workspace and the request digest (16 hex) it answers
* upload grant ``ug_<w>_<ulid>``             — its workspace, and its creation order
* artifact  ``ar_<w>_<ulid>``                — its workspace, and its creation order (list order)
* session   ``ses_<w>_<ulid>``               — an agent session: its workspace, and its creation order
* request   ``rq_<w>_<b>_<number>_<ulid>``   — a peer question (coordination): its source task, and its order
* review    ``rv_<w>_<b>_<number>_<ulid>``   — a submitted review (coordination): its task, and its order

Because a task id names its workspace and board, a write can guard membership with a
``ConditionCheck`` in the same transaction and address the task's items without a lookup.
A task never changes board (moves are between columns of its board).
"""

from __future__ import annotations

import functools
import re
import secrets
from dataclasses import dataclass

_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"
_PART = r"[a-z2-7]"
# Patterns as strings, compiled by their first use (:func:`_rx`): a cold start compiles only the
# kinds its first calls parse (~0.5 ms apiece) instead of all fourteen at import.

WORKSPACE_RE = rf"^ws_({_PART}{{12}})$"
BOARD_RE = rf"^bd_({_PART}{{12}})_({_PART}{{8}})$"
COLUMN_RE = rf"^cl_({_PART}{{12}})_({_PART}{{8}})_({_PART}{{6}})$"
TASK_RE = rf"^tk_({_PART}{{12}})_({_PART}{{8}})_([1-9][0-9]{{0,9}})$"
LABEL_RE = rf"^lb_({_PART}{{12}})_({_PART}{{8}})_({_PART}{{6}})$"
ATTACHMENT_RE = rf"^at_({_PART}{{12}})_({_PART}{{8}})_([1-9][0-9]{{0,9}})_([0-9a-hjkmnp-tv-z]{{26}})$"
COMMENT_RE = rf"^cm_({_PART}{{12}})_({_PART}{{8}})_([1-9][0-9]{{0,9}})_([0-9a-hjkmnp-tv-z]{{26}})$"
PROJECT_RE = rf"^pj_({_PART}{{12}})_({_PART}{{8}})$"
INVITATION_RE = rf"^inv_({_PART}{{12}})_([0-9a-hjkmnp-tv-z]{{26}})$"
APPROVAL_RE = rf"^ap_({_PART}{{12}})_([0-9a-f]{{16}})_([0-9a-hjkmnp-tv-z]{{26}})$"
UPLOAD_GRANT_RE = rf"^ug_({_PART}{{12}})_([0-9a-hjkmnp-tv-z]{{26}})$"
ARTIFACT_RE = rf"^ar_({_PART}{{12}})_([0-9a-hjkmnp-tv-z]{{26}})$"
SESSION_RE = rf"^ses_({_PART}{{12}})_([0-9a-hjkmnp-tv-z]{{26}})$"
REQUEST_RE = rf"^rq_({_PART}{{12}})_({_PART}{{8}})_([1-9][0-9]{{0,9}})_([0-9a-hjkmnp-tv-z]{{26}})$"
REVIEW_RE = rf"^rv_({_PART}{{12}})_({_PART}{{8}})_([1-9][0-9]{{0,9}})_([0-9a-hjkmnp-tv-z]{{26}})$"
INTEGRATION_RE = rf"^ig_({_PART}{{12}})_({_PART}{{8}})_([1-9][0-9]{{0,9}})_([0-9a-hjkmnp-tv-z]{{26}})$"
CONSULTATION_RE = rf"^cs_({_PART}{{12}})_([0-9a-hjkmnp-tv-z]{{26}})$"
SUBTASK_RE = rf"^st_({_PART}{{12}})_({_PART}{{8}})_([1-9][0-9]{{0,9}})_([0-9a-hjkmnp-tv-z]{{26}})$"


@functools.cache
def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _rand(n: int) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(n))


def new_workspace_id() -> str:
    return f"ws_{_rand(12)}"


def new_board_id(workspace_id: str) -> str:
    return f"bd_{workspace_id[3:]}_{_rand(8)}"


def new_column_id(board_id: str) -> str:
    return f"cl_{board_id[3:]}_{_rand(6)}"


def new_project_id(workspace_id: str) -> str:
    return f"pj_{workspace_id[3:]}_{_rand(8)}"


def parse_project(value: str) -> tuple[str, str] | None:
    """``(workspace_id, project_id)`` for a well-formed project id, else ``None``."""
    m = _rx(PROJECT_RE).fullmatch(value)
    return (f"ws_{m.group(1)}", value) if m else None


def new_label_id(board_id: str) -> str:
    return f"lb_{board_id[3:]}_{_rand(6)}"


def task_id(board_id: str, number: int) -> str:
    return f"tk_{board_id[3:]}_{number}"


def new_user_id() -> str:
    return f"usr_{_rand(12)}"


USER_RE = rf"^usr_({_PART}{{12}})$"


def parse_user(value: str) -> str | None:
    """``value`` when it is a well-formed user id (``usr_`` and 12 base32 characters), else ``None``."""
    return value if _rx(USER_RE).fullmatch(value) else None


def new_token_id() -> str:
    return f"tok_{_rand(12)}"


@dataclass(frozen=True)
class TaskRef:
    workspace_id: str
    board_id: str
    number: int


def parse_workspace(value: str) -> str | None:
    return value if _rx(WORKSPACE_RE).fullmatch(value) else None


def parse_board(value: str) -> tuple[str, str] | None:
    """``(workspace_id, board_id)`` for a well-formed board id, else ``None``."""
    m = _rx(BOARD_RE).fullmatch(value)
    return (f"ws_{m.group(1)}", value) if m else None


def workspace_of_board(board_id: str) -> str:
    """The workspace a (well-formed) board id names."""
    return f"ws_{board_id[3:15]}"


def parse_column(value: str) -> tuple[str, str, str] | None:
    """``(workspace_id, board_id, column_id)`` for a well-formed column id, else ``None``."""
    m = _rx(COLUMN_RE).fullmatch(value)
    return (f"ws_{m.group(1)}", f"bd_{m.group(1)}_{m.group(2)}", value) if m else None


def parse_label(value: str) -> tuple[str, str, str] | None:
    """``(workspace_id, board_id, label_id)`` for a well-formed label id, else ``None``."""
    m = _rx(LABEL_RE).fullmatch(value)
    return (f"ws_{m.group(1)}", f"bd_{m.group(1)}_{m.group(2)}", value) if m else None


def parse_task(value: str) -> TaskRef | None:
    m = _rx(TASK_RE).fullmatch(value)
    if not m:
        return None
    return TaskRef(f"ws_{m.group(1)}", f"bd_{m.group(1)}_{m.group(2)}", int(m.group(3)))


@dataclass(frozen=True)
class CommentRef:
    """A comment id names its task (workspace, board, number) and its ULID (creation order)."""

    task: TaskRef
    ulid: str

    @property
    def task_id(self) -> str:
        return task_id(self.task.board_id, self.task.number)


def new_comment_id(task: TaskRef, ulid: str) -> str:
    return f"cm_{task.board_id[3:]}_{task.number}_{ulid}"


def new_attachment_id(task: TaskRef, ulid: str) -> str:
    return f"at_{task.board_id[3:]}_{task.number}_{ulid}"


def parse_attachment(value: str) -> CommentRef | None:
    """An attachment id has a comment id's shape (task + ULID); the ref reuses :class:`CommentRef`."""
    m = _rx(ATTACHMENT_RE).fullmatch(value)
    if not m:
        return None
    return CommentRef(TaskRef(f"ws_{m.group(1)}", f"bd_{m.group(1)}_{m.group(2)}", int(m.group(3))), m.group(4))


def parse_comment(value: str) -> CommentRef | None:
    m = _rx(COMMENT_RE).fullmatch(value)
    if not m:
        return None
    return CommentRef(TaskRef(f"ws_{m.group(1)}", f"bd_{m.group(1)}_{m.group(2)}", int(m.group(3))), m.group(4))


def new_request_id(task: TaskRef, ulid: str) -> str:
    return f"rq_{task.board_id[3:]}_{task.number}_{ulid}"


def parse_request(value: str) -> CommentRef | None:
    """A request id has a comment id's shape (its source task + ULID); the ref reuses :class:`CommentRef`."""
    m = _rx(REQUEST_RE).fullmatch(value)
    if not m:
        return None
    return CommentRef(TaskRef(f"ws_{m.group(1)}", f"bd_{m.group(1)}_{m.group(2)}", int(m.group(3))), m.group(4))


def new_integration_id(task: TaskRef, ulid: str) -> str:
    return f"ig_{task.board_id[3:]}_{task.number}_{ulid}"


def parse_integration(value: str) -> CommentRef | None:
    """An integration id names its parent task and its ULID (a comment id's shape, like a review's)."""
    m = _rx(INTEGRATION_RE).fullmatch(value)
    if not m:
        return None
    return CommentRef(TaskRef(f"ws_{m.group(1)}", f"bd_{m.group(1)}_{m.group(2)}", int(m.group(3))), m.group(4))


def new_consultation_id(workspace_id: str, ulid: str) -> str:
    return f"cs_{workspace_id[3:]}_{ulid}"


def parse_consultation(value: str) -> tuple[str, str] | None:
    """``(workspace id, ULID)`` of a consultation id, or ``None`` when malformed."""
    m = _rx(CONSULTATION_RE).fullmatch(value)
    return (f"ws_{m.group(1)}", m.group(2)) if m else None


def new_decision_id(workspace_id: str, ulid: str) -> str:
    """A proposed decision's id: its workspace and the ULID of the message it was promoted from."""
    return f"dc_{workspace_id[3:]}_{ulid}"


def new_review_id(task: TaskRef, ulid: str) -> str:
    return f"rv_{task.board_id[3:]}_{task.number}_{ulid}"


def parse_review(value: str) -> CommentRef | None:
    """A review id has a comment id's shape (its task + ULID); the ref reuses :class:`CommentRef`."""
    m = _rx(REVIEW_RE).fullmatch(value)
    if not m:
        return None
    return CommentRef(TaskRef(f"ws_{m.group(1)}", f"bd_{m.group(1)}_{m.group(2)}", int(m.group(3))), m.group(4))


@dataclass(frozen=True)
class SubtaskRef:
    """A subtask id names its task (workspace, board, number) and its ULID (checklist order)."""

    task: TaskRef
    ulid: str

    @property
    def task_id(self) -> str:
        return task_id(self.task.board_id, self.task.number)


def new_subtask_id(task: TaskRef, ulid: str) -> str:
    return f"st_{task.board_id[3:]}_{task.number}_{ulid}"


def parse_subtask(value: str) -> SubtaskRef | None:
    m = _rx(SUBTASK_RE).fullmatch(value)
    if not m:
        return None
    return SubtaskRef(TaskRef(f"ws_{m.group(1)}", f"bd_{m.group(1)}_{m.group(2)}", int(m.group(3))), m.group(4))


@dataclass(frozen=True)
class InvitationRef:
    workspace_id: str
    ulid: str


def new_invitation_id(workspace_id: str, ulid: str) -> str:
    return f"inv_{workspace_id[3:]}_{ulid}"


def parse_invitation(value: str) -> InvitationRef | None:
    m = _rx(INVITATION_RE).fullmatch(value)
    return InvitationRef(f"ws_{m.group(1)}", m.group(2)) if m else None


@dataclass(frozen=True)
class ApprovalRef:
    workspace_id: str
    request: str
    ulid: str


def new_approval_id(workspace_id: str, request: str, ulid: str) -> str:
    return f"ap_{workspace_id[3:]}_{request}_{ulid}"


def parse_approval(value: str) -> ApprovalRef | None:
    m = _rx(APPROVAL_RE).fullmatch(value)
    return ApprovalRef(f"ws_{m.group(1)}", m.group(2), m.group(3)) if m else None


@dataclass(frozen=True)
class GrantRef:
    workspace_id: str
    ulid: str


def new_upload_grant_id(workspace_id: str) -> str:
    from ulid import ULID

    return f"ug_{workspace_id[3:]}_{str(ULID()).lower()}"


def parse_upload_grant(value: str) -> GrantRef | None:
    m = _rx(UPLOAD_GRANT_RE).fullmatch(value)
    return GrantRef(f"ws_{m.group(1)}", m.group(2)) if m else None


@dataclass(frozen=True)
class ArtifactRef:
    """An artifact id names its workspace and its ULID (creation order)."""

    workspace_id: str
    ulid: str

    @property
    def artifact_id(self) -> str:
        return f"ar_{self.workspace_id[3:]}_{self.ulid}"


def new_artifact_id(workspace_id: str) -> str:
    from ulid import ULID

    return f"ar_{workspace_id[3:]}_{str(ULID()).lower()}"


def parse_artifact(value: str) -> ArtifactRef | None:
    m = _rx(ARTIFACT_RE).fullmatch(value)
    return ArtifactRef(f"ws_{m.group(1)}", m.group(2)) if m else None


@dataclass(frozen=True)
class SessionRef:
    """An agent session id names its workspace and its ULID (creation order)."""

    workspace_id: str
    ulid: str

    @property
    def session_id(self) -> str:
        return f"ses_{self.workspace_id[3:]}_{self.ulid}"


def new_session_id(workspace_id: str, ulid: str | None = None) -> str:
    """A new session id in ``workspace_id`` (a fresh lowercase ULID unless one is given)."""
    if ulid is None:
        from ulid import ULID

        ulid = str(ULID()).lower()
    return f"ses_{workspace_id[3:]}_{ulid}"


def parse_session(value: str) -> SessionRef | None:
    m = _rx(SESSION_RE).fullmatch(value)
    return SessionRef(f"ws_{m.group(1)}", m.group(2)) if m else None


_TASK_KEY = re.compile(r"([A-Za-z][A-Za-z0-9]*)-([1-9][0-9]{0,9})")


def parse_task_key(text: str) -> tuple[str, int] | None:
    """A task key such as ``ST-42`` (surrounding whitespace ignored): ``(prefix upper-cased,
    number)``; ``None`` for any other text. Whose workspace the prefix belongs to is not checked."""
    m = _TASK_KEY.fullmatch(text.strip())
    return (m.group(1).upper(), int(m.group(2))) if m else None
