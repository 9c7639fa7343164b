"""Argument types shared by the tool modules (field descriptions are part of every inputSchema),
and the null rule every update_* tool applies (:func:`requested_changes`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

Priority = Literal["NONE", "LOW", "MEDIUM", "HIGH", "URGENT"]
ResponseFormat = Literal["concise", "detailed"]
ActivityType = Literal[
    "board.created", "board.renamed", "board.archived", "board.unarchived",
    "column.created", "column.renamed", "column.moved", "column.archived",
    "task.created", "task.updated", "task.moved", "task.archived",
    "comment.created", "comment.updated", "comment.deleted",
    "task.link_added", "task.link_removed",
    "subtask.created", "subtask.completed", "subtask.reopened", "subtask.deleted",
    "task.assignees_set",
    "label.created", "label.updated", "label.deleted", "task.labels_set",
]

WorkspaceIdArg = Annotated[str, Field(max_length=64, description='Workspace id (ws_…); "" selects the workspace this token or connection is bound to.')]
BoardIdArg = Annotated[str, Field(min_length=1, max_length=64, description="Board id (bd_…).")]
ColumnIdArg = Annotated[str, Field(min_length=1, max_length=80, description="Column id (cl_…).")]
TaskIdArg = Annotated[str, Field(min_length=1, max_length=80, description="Task id (tk_…).")]
IdempotencyKeyArg = Annotated[
    str | None,
    Field(default=None, min_length=1, max_length=128, description="Optional retry key. Repeating the call with this key and identical arguments returns the original result rather than creating a second one."),
]
ExpectedUpdatedAtArg = Annotated[
    str | None,
    Field(
        default=None,
        pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$",
        description="Optional concurrency guard: the updatedAt you last read. If the entity changed since, nothing is written and CONFLICT returns its current state.",
    ),
]
LinkKind = Literal["BLOCKS", "DEPENDS_ON", "RELATES_TO", "DUPLICATES"]
LimitArg = Annotated[int, Field(default=50, ge=1, le=200, description="Page size (1-200).")]
CursorArg = Annotated[str | None, Field(default=None, max_length=2048, description="nextCursor from the previous page, sent with the same filters; omit for the first page.")]


# -- the null rule of every update_* tool (docs/decisions.md, "After the second trial") --------------
def null_rule(clearable: Iterable[str], kept: Iterable[str]) -> str:
    """The sentence every update_* tool description carries, naming its fields.

    ``clearable`` are the fields a null empties, ``kept`` those where null is ignored.
    """
    cleared, ignored = ", ".join(clearable) or "none here", ", ".join(kept) or "none here"
    return (
        f"Fields you leave out stay as they are; null empties a field that may be empty ({cleared}); null on a field "
        f"that cannot be empty ({ignored}) is ignored. changedFields in the result names the fields the call changed."
    )


def requested_changes(args: BaseModel, *, clear_to: Mapping[str, Any], not_values: Iterable[str]) -> dict[str, Any]:
    """The new values an update_* call asks for, under the one null rule.

    * a field the caller left out is not in the result (it stays as it is);
    * ``null`` on a field of ``clear_to`` asks for that field's empty value (``""``, ``None``);
    * ``null`` on any other field is ignored, as if left out (it cannot be empty);
    * ``not_values`` (ids, ``expectedUpdatedAt``) are never changes.

    Keys come in the model's field order.
    """
    skip = set(not_values)
    sent = args.model_fields_set
    out: dict[str, Any] = {}
    for name in type(args).model_fields:
        if name in skip or name not in sent:
            continue
        value = getattr(args, name)
        if value is None:
            if name not in clear_to:
                continue
            value = clear_to[name]
        out[name] = value
    return out
