"""Argument types shared by the tool modules (field descriptions are part of every inputSchema),
and the null rule every update_* tool applies (:func:`requested_changes`)."""

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field
from pydantic_core import PydanticCustomError

from domain import ids
from domain.context import REDACTING

Priority = Literal["NONE", "LOW", "MEDIUM", "HIGH", "URGENT"]
ResponseFormat = Literal["concise", "detailed"]
ActivityType = Literal[
    "board.created",
    "board.renamed",
    "board.archived",
    "board.unarchived",
    "column.created",
    "column.renamed",
    "column.moved",
    "column.archived",
    "task.created",
    "task.updated",
    "task.moved",
    "task.archived",
    "task.bulk_created",
    "comment.created",
    "comment.updated",
    "comment.deleted",
    "task.link_added",
    "task.link_removed",
    "subtask.created",
    "subtask.completed",
    "subtask.reopened",
    "subtask.deleted",
    "task.assignees_set",
    "label.created",
    "label.updated",
    "label.deleted",
    "task.labels_set",
    "session.aligned",
    "artifact.attached",
    "attachment.added",
    "claim.recorded",
    "request.asked",
    "request.answered",
    "request.cancelled",
    "request.late_reply",
    "message.posted",
    "review.submitted",
    "review.accepted",
    "review.changes_requested",
    "message.promoted",
]

WorkspaceIdArg = Annotated[str, Field(max_length=64, description='ws_…; "" = the bound one.')]
BoardIdArg = Annotated[str, Field(min_length=1, max_length=64, description="bd_…")]
ColumnIdArg = Annotated[str, Field(min_length=1, max_length=80, description="cl_…")]
TaskIdArg = Annotated[str, Field(min_length=1, max_length=80, description="tk_…")]
IdempotencyKeyArg = Annotated[
    str | None,
    Field(default=None, min_length=1, max_length=128),
]
ExpectedUpdatedAtArg = Annotated[
    str | None,
    Field(
        default=None,
        pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$",
        description="updatedAt read; changed: CONFLICT.",
    ),
]
LinkKind = Literal["BLOCKS", "DEPENDS_ON", "RELATES_TO", "DUPLICATES"]
LimitArg = Annotated[int, Field(default=50, ge=1, le=200)]
CursorArg = Annotated[str | None, Field(default=None, max_length=2048)]
# The task filters list_tasks, list_my_work and search_tasks share (issue 14): one name, one bound each.
_DAY = r"^\d{4}-\d{2}-\d{2}$"
LabelNameFilter = Annotated[
    str | None, Field(default=None, min_length=1, max_length=50, description="Label name, any case.")
]
DueBeforeFilter = Annotated[str | None, Field(default=None, pattern=_DAY, description="YYYY-MM-DD, exclusive.")]
DueAfterFilter = Annotated[str | None, Field(default=None, pattern=_DAY, description="YYYY-MM-DD, inclusive.")]
OverdueFilter = Annotated[bool | None, Field(default=None, description="true: due before now.")]
UpdatedSinceFilter = Annotated[str | None, Field(default=None, max_length=40, description="ISO-8601 time.")]


# -- the shape of id filters (docs/decisions.md, "Malformed ids cost no request") ------------------
# Targets and refs are checked by the pipeline (domain.access.refuse_malformed: NOT_FOUND or the
# ref's error); an id argument that only filters a list, or that a handler reads itself, carries
# IdShape instead: a value that cannot be an id of its kind is INVALID_INPUT before any read.
_ID_FORMS: dict[str, tuple[Any, str]] = {
    "user": (ids.parse_user, "usr_…"),
    "board": (ids.parse_board, "bd_…"),
    "column": (ids.parse_column, "cl_…"),
    "project": (ids.parse_project, "pj_…"),
    "upload_grant": (ids.parse_upload_grant, "ug_…"),
}


def IdShape(kind: str, *, also: tuple[str, ...] = ()) -> Any:  # used like a type
    """A validator refusing a value that is not a ``kind`` id (``also``: extra accepted words such as "me")."""
    parse, form = _ID_FORMS[kind]

    def check(value: str | None) -> str | None:
        if value is None or value in also or parse(value) is not None:
            return value
        raise PydanticCustomError(
            "id_shape",
            f"is not a {kind.replace('_', ' ')} id ({form})",
            {"hint": f"Send an id of the form {form} as the list and get tools return them."},
        )

    return AfterValidator(check)


# -- single-line text: titles and names (docs/decisions.md, "Control characters in names") --------
# C0 controls but tab and newline, DEL and the C1 block: an ANSI escape (ESC, U+001B) would
# otherwise reach every terminal and log that shows the name.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
CONTROL_HINT = (
    "Remove terminal escape sequences and other control characters; newline and tab are the only ones accepted."
)


def no_controls(value: str | None) -> str | None:
    """``value`` unchanged; INVALID_INPUT (through pydantic) when it holds a control character
    other than newline or tab."""
    if value is None:
        return None
    found = _CONTROL.search(value)
    if found is not None:
        code = f"U+{ord(found.group()):04X}"
        raise PydanticCustomError("control_character", f"contains the control character {code}", {"hint": CONTROL_HINT})
    return value


SingleLine = AfterValidator(no_controls)
"""The validator every title and name argument carries (``Annotated[str, Field(...), SingleLine]``)."""

# -- redaction at ingest (issue 24) --------------------------------------------------------------
# Text a tool stores for people to read again (task titles and descriptions, comment bodies,
# subtask titles) loses its secrets while the arguments are parsed, so that nothing after the
# parse (idempotency record, handler, activity line, table, search index, logs) sees them.


def _redacted(value: Any) -> Any:
    if not isinstance(value, str) or not value:
        return value
    from domain.redaction import redact  # deferred: the rules load with the first text, not at cold start

    out = redact(value)
    if not out.findings:
        return value
    seen = REDACTING.get()
    if seen is not None:
        seen.update(out.rule_ids)
    return out.text


Redact = AfterValidator(_redacted)


def redactions_field() -> Any:
    """The ``redactions`` field of a write tool's answer, filled by the pipeline from the call's
    arguments (an empty list when nothing was redacted)."""
    return Field(default_factory=list, description="Rule ids of secrets replaced in your text before it was stored.")


# -- task fields (create_task, update_task and the bulk task tools) ----------------------------------
TitleArg = Annotated[str, Field(min_length=1, max_length=500), SingleLine, Redact]
DescriptionArg = Annotated[str | None, Field(default=None, max_length=20000, description="Markdown."), Redact]
DUE_FORMS = "YYYY-MM-DD or zoned timestamp (stored UTC)"
# Explicit shapes: Python's fromisoformat also takes week dates (2026-W32-6), ordinal dates
# (2026-213) and timestamps without a zone, which would be stored as something else than asked.
_DUE_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DUE_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})")
DUE_HINT = "Send a date such as 2026-08-01, or a timestamp with a zone such as 2026-08-01T17:00:00Z or 2026-08-01T19:00:00+02:00."


def normalise_due(value: str | None) -> str | None:
    """A date stays ``YYYY-MM-DD``; a timestamp with a zone becomes UTC with milliseconds and ``Z``."""
    if value is None:
        return None
    try:
        if _DUE_DATE.fullmatch(value):
            date.fromisoformat(value)
            return value
        if _DUE_STAMP.fullmatch(value):
            utc = datetime.fromisoformat(value).astimezone(UTC)
            return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
    except (ValueError, OverflowError):
        pass
    raise PydanticCustomError("due_date", "must be a date (YYYY-MM-DD) or a timestamp with a zone", {"hint": DUE_HINT})


DueDateArg = Annotated[
    str | None,
    Field(default=None, max_length=40, description=f"{DUE_FORMS}."),
    AfterValidator(lambda v: normalise_due(v)),
]
NewDueDateArg = Annotated[  # update_* tools: null removes the due date
    str | None,
    Field(default=None, max_length=40, description=f"{DUE_FORMS}; null removes it."),
    AfterValidator(lambda v: normalise_due(v)),
]


# -- the null rule of every update_* tool (docs/decisions.md, "After the second trial") --------------
def null_rule(clearable: Iterable[str], kept: Iterable[str]) -> str:
    """The sentence every update_* tool description carries, naming its fields.

    ``clearable`` are the fields a null empties, ``kept`` those where null is ignored (every
    other field; the sentence does not list them).
    """
    del kept
    names = list(clearable)
    if not names:
        return "Omitted fields stay as they are; null is ignored."
    cleared = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"Omitted fields stay as they are; null clears {cleared}, elsewhere it is ignored."


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
