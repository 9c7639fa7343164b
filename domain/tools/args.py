"""Argument types shared by the tool modules (field descriptions are part of every inputSchema)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

Priority = Literal["NONE", "LOW", "MEDIUM", "HIGH", "URGENT"]
ResponseFormat = Literal["concise", "detailed"]
ActivityType = Literal[
    "board.created", "board.renamed",
    "column.created", "column.renamed", "column.moved", "column.archived",
    "task.created", "task.updated", "task.moved", "task.archived",
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
LimitArg = Annotated[int, Field(default=50, ge=1, le=200, description="Page size (1-200).")]
CursorArg = Annotated[str | None, Field(default=None, max_length=2048, description="nextCursor from the previous page; omit for the first page.")]
