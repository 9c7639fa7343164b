"""What a tool declares about the entity it acts on: the declarations the access policy reads.

A :class:`~domain.registry.ToolSpec` carries a :class:`Target` (which argument names the entity,
or a resolver for either/or tools), its :class:`Ref` arguments (secondary ids and the answer a
foreign value gets) and, for reads done with the membership, a :class:`Prefetch`. The access
step (``domain.access``) locates the target as a :class:`Located` and checks it.

These are plain values with no behaviour beyond their constructors, kept apart from the policy
so the registry, the access step and governance can all name them without importing each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from domain.errors import ErrorCode
from domain.located import Located as Located

if TYPE_CHECKING:
    from domain.context import CallContext

Kind = Literal[
    "workspace",
    "board",
    "column",
    "task",
    "comment",
    "subtask",
    "label",
    "project",
    "invitation",
    "session",
    "artifact",
]
RefKind = Literal[
    "workspace",
    "board",
    "column",
    "task",
    "user",
    "label",
    "comment",
    "subtask",
    "project",
    "invitation",
    "session",
    "artifact",
]
# Kinds whose ids name their workspace (and board), so containment is checked from the id alone.
# Label ids carry their board too, but set_task_labels names every foreign label id in one
# answer, so label refs are checked by the handler against the board's labels.
TENANCY_KINDS: frozenset[str] = frozenset(
    {"workspace", "board", "column", "task", "comment", "subtask", "project", "invitation", "session", "artifact"}
)


@dataclass(frozen=True)
class TargetField:
    """One argument that may name the target, and the entity kind it names.

    ``with_args`` are example companion arguments that make a resolver choose this alternative
    (``{"number": 1}`` beside ``workspaceId`` for get_task); the docs and the test harness read them.
    """

    field: str
    kind: Kind
    with_args: tuple[tuple[str, Any], ...] = ()


Resolver = Callable[["CallContext", Any], Located]


@dataclass(frozen=True)
class Target:
    """The target declaration of a tool.

    ``fields`` lists the arguments that may name it (the first is the usual one); ``resolve``
    picks among them for either/or tools and may raise INVALID_INPUT for a missing choice.
    With ``each`` set, ``fields[0].field`` is a list argument and ``each`` names the id field of
    its items (``items[].taskId``); ``all_or_nothing`` then fails the whole call on one bad item.
    """

    fields: tuple[TargetField, ...]
    resolve: Resolver | None = None
    each: str | None = None
    all_or_nothing: bool = False


@dataclass(frozen=True)
class Ref:
    """A secondary id argument (``beforeTaskId``, ``labelIds``, ``userId`` …).

    ``within`` is where the value must lie relative to the target (its ``board`` or its
    ``workspace``); ``error`` is the code a foreign or unknown value gets; ``many`` marks a list
    of ids. Refs whose kind carries tenancy are checked by :func:`authorize`; the others (users,
    labels) need a read and are checked by the handler — the declaration still tells the test
    harness what answer to expect.
    """

    field: str
    kind: RefKind
    within: Literal["board", "workspace"] = "workspace"
    error: ErrorCode = ErrorCode.NOT_FOUND
    many: bool = False
    message: str | None = None
    hint: str | None = None

    @property
    def checked_by_pipeline(self) -> bool:
        return self.kind in TENANCY_KINDS


def target(field_name: str, kind: Kind) -> Target:
    """The common case: one argument names the target."""
    return Target((TargetField(field_name, kind),))


def either(*alternatives: tuple[str, Kind] | tuple[str, Kind, dict[str, Any]], resolve: Resolver) -> Target:
    """An either/or target (``taskId``, or ``workspaceId`` + ``number``) with its resolver; an
    alternative may carry the companion arguments that select it."""
    fields = []
    for alt in alternatives:
        companions = tuple(sorted(alt[2].items())) if len(alt) > 2 else ()
        fields.append(TargetField(alt[0], alt[1], companions))
    return Target(tuple(fields), resolve=resolve)


def each(list_field: str, id_field: str, kind: Kind, *, all_or_nothing: bool = False) -> Target:
    """A list target: every item of ``list_field`` names one entity through ``id_field``."""
    return Target((TargetField(list_field, kind),), each=id_field, all_or_nothing=all_or_nothing)


@dataclass(frozen=True)
class Prefetch:
    """What a handler will read first, declared so the access step can read it with the membership.

    ``items`` are fetched in the same consistent BatchGetItem as the member item (their rows are
    on ``ctx.item(key)``, for the core's own steps; tools declare named read plans); ``queries`` start on the I/O pool at the same time
    (``ctx.query(name)`` waits for one). Nothing is returned to the caller before membership and
    role are checked, so reading early reveals nothing.
    """

    items: tuple[tuple[str, str], ...] = ()
    queries: tuple[tuple[str, Callable[[], Any]], ...] = ()
    # Keys the handler checks itself against a freshness witness read strongly beside them
    # (get_task's full item: domain.store.witness). When every item of the call's BatchGetItem is
    # one of these (a warm membership: no member item rides along), it is read eventually
    # consistent (half the read units) and ``ctx.read.eventual`` is True.
    eventual: tuple[tuple[str, str], ...] = ()
