"""The tool error envelope shared by every tool (catalog: "The shared contract", the error envelope).

A failing tool call answers ``isError: true`` with ``{"error": {"code", "message", "hint"}}``.
``code`` is one of :class:`ErrorCode`; RATE_LIMITED adds ``retryAfterSeconds`` and CONFLICT may
embed the entity's current state under ``current`` so the caller can merge without a re-read.
An optional ``reason`` is a stable, machine-readable refinement of ``code`` for the failures a
client must tell apart without parsing the message (:data:`REASONS`); it is present only on those.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    """The six codes a tool failure may carry; nothing else reaches a client."""

    FORBIDDEN = "FORBIDDEN"
    NOT_FOUND = "NOT_FOUND"
    INVALID_INPUT = "INVALID_INPUT"
    RATE_LIMITED = "RATE_LIMITED"
    CONFLICT = "CONFLICT"
    INTERNAL = "INTERNAL"


# Every ``error.reason`` a tool may answer, with the code it refines. A client branches on these;
# they are never reworded (the message and hint are prose and may change).
REASONS: dict[str, str] = {
    "SESSION_ALREADY_BOUND": "CONFLICT",  # attach_agent_session: the provider thread is bound to another open session
    "SESSION_RESUME_CONFLICT": "CONFLICT",  # resume_agent_session: another project or repository than the session's
}


class ToolError(Exception):
    """A user-fixable (or at least user-explainable) tool failure.

    Raised anywhere below the pipeline; the pipeline turns it into the envelope. ``current``
    is the entity as stored now (CONFLICT only); ``retry_after_seconds`` goes with
    RATE_LIMITED and with CONFLICTs that are worth retrying as-is.
    """

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        hint: str = "",
        *,
        current: dict[str, Any] | None = None,
        retry_after_seconds: int | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message)
        if reason is not None and REASONS.get(reason) != code.value:
            raise ValueError(f"undeclared error reason {reason!r} for {code.value}")
        self.code = code
        self.message = message
        self.hint = hint
        self.current = current
        self.retry_after_seconds = retry_after_seconds
        self.reason = reason

    def envelope(self) -> dict[str, Any]:
        """Return ``{"error": {...}}`` exactly as it goes on the wire."""
        body: dict[str, Any] = {"code": self.code.value, "message": self.message, "hint": self.hint}
        if self.reason is not None:
            body["reason"] = self.reason
        if self.retry_after_seconds is not None:
            body["retryAfterSeconds"] = self.retry_after_seconds
        if self.current is not None:
            body["current"] = self.current
        return {"error": body}


class TaskNumber(str):
    """The ident of a task looked up by workspace + number (get_task), so that every NOT_FOUND
    about it — missing number, invisible workspace — reads as a number, not as an id."""

    workspace_id: str
    number: int

    def __new__(cls, workspace_id: str, number: int) -> TaskNumber:
        made = super().__new__(cls, f"number {number} in workspace {workspace_id}")
        made.workspace_id, made.number = workspace_id, number
        return made


def not_found(kind: str, ident: str) -> ToolError:
    """NOT_FOUND for a missing id *or* one the caller may not see: the two are indistinguishable."""
    if isinstance(ident, TaskNumber):
        return ToolError(
            ErrorCode.NOT_FOUND,
            f"No task number {ident.number} in workspace {ident.workspace_id} is visible to this credential.",
            "Check the number (the digits after the dash of a key such as ST-42) and the workspace; get_board_snapshot "
            "or list_tasks show the tasks and their numbers.",
        )
    return ToolError(
        ErrorCode.NOT_FOUND,
        f"No {kind} with id {ident!r} is visible to this credential.",
        _NOT_FOUND_HINTS.get(kind, _NOT_FOUND_HINT),
    )


_NOT_FOUND_HINT = "Check the id; get_board_snapshot or list_tasks show the ids you can use."
# Where the ids of each kind are listed (a kind missing here is a task-side entity).
_NOT_FOUND_HINTS = {
    **{
        k: f"Check the id; list_{k}s or get_board_snapshot show the ids you can use."
        for k in ("board", "workspace", "project")
    },
    "session": "Check the id; list_agent_sessions shows the sessions you can use.",
    "member": "Check the userId; list_members shows this workspace's members and their userIds.",
    "user": "Check the userId; list_members shows this workspace's members and their userIds.",
    "invitation": "Check the id; list_invitations shows this workspace's pending invitations.",
    "artifact": "Check the id; list_artifacts or search_artifacts show the artifacts you can use.",
}


def invalid(field: str, message: str, hint: str = "") -> ToolError:
    """INVALID_INPUT naming the offending field first, so an agent can fix that one argument."""
    return ToolError(
        ErrorCode.INVALID_INPUT, f"{field}: {message}", hint or f"Fix the '{field}' argument and call again."
    )


def board_archived(field: str = "taskId") -> ToolError:
    """INVALID_INPUT for a write on an archived board's tasks (their comments, their labels),
    which are read-only; ``field`` is the argument that named the board's entity."""
    subject = {
        "taskId": "the task's board is archived",
        "fromTaskId": "the task's board is archived",
        "toTaskId": "the task's board is archived",
        "commentId": "the comment's task is on an archived board",
        "subtaskId": "the subtask's task is on an archived board",
        "columnId": "the column's board is archived",
        "labelId": "the label's board is archived",
    }.get(field, "this board is archived")
    return invalid(
        field,
        f"{subject}: its tasks and labels are read-only",
        "Read it with get_task, list_tasks or get_board_snapshot; a workspace admin can restore the board with unarchive_boards.",
    )


def forbidden(message: str, hint: str) -> ToolError:
    return ToolError(ErrorCode.FORBIDDEN, message, hint)


def conflict(
    message: str,
    hint: str,
    *,
    current: dict[str, Any] | None = None,
    retry_after_seconds: int | None = None,
    reason: str | None = None,
) -> ToolError:
    return ToolError(
        ErrorCode.CONFLICT, message, hint, current=current, retry_after_seconds=retry_after_seconds, reason=reason
    )


# A human task key (ST-42): what people paste where a task id belongs.
TASK_KEY = re.compile(r"\s*[A-Za-z][A-Za-z0-9]*-([1-9][0-9]{0,9})\s*")


def task_key_for_id(value: str) -> ToolError | None:
    """NOT_FOUND naming the workspaceId + number way when ``value`` is a task key sent as a task
    id (get_task takes both); ``None`` for any other value."""
    key = TASK_KEY.fullmatch(value)
    if key is None:
        return None
    return ToolError(
        ErrorCode.NOT_FOUND,
        f"No task with id {value!r}: that is a task key, and taskId takes an id (tk_…).",
        f'To look a task up by its key, pass workspaceId ("" for the bound workspace) and number {int(key.group(1))} instead of taskId.',
    )
