"""Tool declarations: :class:`ToolSpec` (one frozen value per tool), :func:`tool`, :class:`Registry`.

A spec holds everything the framework enforces or publishes about a tool: the catalog's scope
class and behaviour flags (read-only / destructive / idempotent), whether it takes an
``idempotencyKey`` (``keyed``), its access policy (``target``, ``min_role``, ``refs``,
``refused_when_bound`` — see :mod:`domain.access`), its area (the toolset docs/tools.md groups
it under), its pydantic input and output models and its handler. ``@tool`` builds a spec and
registers nothing: each area module lists its specs in ``TOOLS`` and :mod:`domain.catalog` lists
the areas. A :class:`Registry` instance checks uniqueness and is what the protocol layer, the
docs generator, the stdio bridge and the tests receive.

Schemas are emitted inline (no ``$ref``) with a plain ``type: object`` root, the portable shape
docs/decisions.md explains; the published input schema leaves ``additionalProperties`` out (Gemini's
function declarations refuse the keyword; the server refuses unknown arguments all the same).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict

from domain.auth import Role, Scope
from domain.targets import Ref, Target

Area = Literal[
    "workspaces",
    "members",
    "boards",
    "tasks",
    "collaboration",
    "search",
    "projects",
    "sessions",
    "artifacts",
    "context",
    "coordination",
]
AREAS: tuple[str, ...] = (
    "workspaces",
    "members",
    "boards",
    "tasks",
    "collaboration",
    "search",
    "projects",
    "sessions",
    "artifacts",
    "context",
    "coordination",
)
# The argument names an idempotency key may take: the catalog's camelCase, and the snake_case of the
# coordination tools, whose arguments follow their own spec (docs/coordination.md).
KEY_FIELDS: tuple[str, ...] = ("idempotencyKey", "idempotency_key")


_FIRST_BUILD = threading.RLock()


class _BuiltOnFirstUse(BaseModel):
    """A model whose validator is built by its first use (``defer_build``), once, whichever
    thread gets there first.

    pydantic 2.13 (the version pinned here, through aws-sam-translator) rebuilds a deferred model
    on first use without a lock, and the rebuild removes the class's validator before setting
    the new one: a second thread using the model in that window fails (``AttributeError: ...
    __pydantic_core_schema__``) or validates against the parent class's schema. Two agents
    calling the same tool at once on a fresh HTTP server or stdio adapter did exactly that
    (tests/test_concurrency.py reproduces it). pydantic 2.14 locks the rebuild itself
    (pydantic/pydantic#13438); until it can be installed here, the two ways an instance comes
    to exist — ``model_validate`` (the pipeline's arguments) and the constructor (results and
    views built by handlers) — build the class under one process-wide lock first. A built class
    pays one attribute check."""

    model_config = ConfigDict(defer_build=True)

    def __init__(self, /, **data: Any) -> None:
        if not type(self).__pydantic_complete__:
            build_model(type(self))
        super().__init__(**data)

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Any:
        if not cls.__pydantic_complete__:
            build_model(cls)
        return super().model_validate(obj, **kwargs)


def build_model(model: type[BaseModel]) -> None:
    """Build a deferred model's validator and serializer now, under the first-build lock (a no-op
    once built). Every first build goes through here: first uses and the init priming."""
    with _FIRST_BUILD:
        if not model.__pydantic_complete__:
            model.model_rebuild()


class ToolInput(_BuiltOnFirstUse):
    """Base of every tool's arguments: unknown fields are refused, types are not coerced.

    Validators are built on first use (``defer_build``), so importing the whole catalog costs
    class creation only: a cold Lambda that serves one tool builds one tool's models.
    """

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)


class ToolOutput(_BuiltOnFirstUse):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class SpecError(ValueError):
    """A tool declaration breaks a framework rule (raised at import, never at call time)."""


@dataclass(frozen=True, kw_only=True)
class ToolSpec:
    name: str
    title: str
    description: str
    area: Area
    scope: Scope
    input_model: type[ToolInput]
    output_model: type[ToolOutput]
    handler: Callable[..., Any]
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    keyed: bool = False
    target: Target | None = None
    min_role: Role | None = None
    refs: tuple[Ref, ...] = field(default_factory=tuple)
    refused_when_bound: bool = False
    prefetch: Callable[[Any, Any], Any] | None = None  # (Located, args) -> domain.targets.Prefetch
    # Named read plans (domain.store.reads): their items ride in the membership BatchGetItem and
    # the handler finds them on ctx.read.<name>, typed, None when absent.
    reads: tuple[str, ...] = ()
    # The argument carrying the caller's expected updatedAt (e.g. "expectedUpdatedAt"): the pipeline
    # puts it on the context and the handler's compare-and-set plan calls ctx.still_current.
    cas: str | None = None
    # A keyed create's crash-safe replay (docs/data-model.md, "Idempotency"): the pipeline puts the
    # creation marker on ctx.marker (the handler writes it in its transaction); when the store
    # finds an earlier marker with the same arguments (idempotency_markers.Earlier), the pipeline
    # answers with replay(ctx, entity_id), the earlier entity as the tool shows it.
    replay: Callable[[Any, str], Any] | None = None
    # A keyed create whose store answers an earlier call itself (bulk_create_tasks finishes what
    # the earlier one left, which needs the arguments): the pipeline puts the creation marker on
    # ctx.marker as for replay, and the handler passes it to the store. replay implies it.
    marker: bool = False
    # The tool writes a board's tasks (or their comments, subtasks, links, labels): the access step
    # reads the board's entry with the membership and refuses while the board is archived.
    open_board: bool = False
    # The governance pack the tool belongs to (docs/governance.md): an agent's call is let through,
    # parked as an approval request or refused by the workspace's policy for that pack (domain.governance).
    governed: str | None = None
    # Checks of a governed call that need no write (the target exists, value guards hold, the
    # caller may ask for this at all): run before the gate, so no approval is filed for a call
    # that would fail anyway. (ctx, args) -> None, raising ToolError.
    precheck: Callable[[Any, Any], None] | None = None
    # Sparse results (domain.projection): the result field holding the rows (a list) or the entity
    # that the caller's ``fields`` argument projects. ``@tool`` adds the ``fields`` argument; the
    # allowed names come from the output model; ids are always kept. ``concise`` rows (no
    # response_format, or 'concise') also drop empty values (null, [], "") the caller did not name.
    fields_of: str | None = None
    concise: bool = False
    # Operator authority (domain.operator; docs/coordination.md, "Operator authority"): True, every
    # call needs it; an argument's name, only calls where that boolean argument is true. The access
    # step checks it after the role and refs (FORBIDDEN), never the handler.
    operator: bool | str = False

    def __post_init__(self) -> None:
        fields = self.input_model.model_fields
        if self.area not in AREAS:
            raise SpecError(f"{self.name}: unknown area {self.area!r}")
        if self.keyed and not any(k in fields for k in KEY_FIELDS):
            raise SpecError(f"keyed tool {self.name} must accept idempotencyKey (or idempotency_key)")
        if self.min_role is not None and self.target is None:
            raise SpecError(f"{self.name}: min_role needs a target (which workspace would the role be checked in?)")
        if self.target is not None and self.min_role is None:
            raise SpecError(f"{self.name}: a target needs a min_role")
        if self.open_board and (self.target is None or self.read_only):
            raise SpecError(f"{self.name}: open_board needs a target and a writing tool")
        if self.read_only and self.destructive:
            raise SpecError(f"{self.name}: a read-only tool cannot be destructive")
        for tf in self.target.fields if self.target else ():
            if tf.field not in fields:
                raise SpecError(f"{self.name}: target field {tf.field!r} is not an argument")
        for ref in self.refs:
            if ref.field not in fields:
                raise SpecError(f"{self.name}: ref field {ref.field!r} is not an argument")
        if self.refs and self.target is None:
            raise SpecError(f"{self.name}: refs are checked against a target")
        if self.prefetch is not None and self.target is None:
            raise SpecError(f"{self.name}: prefetch reads with the target's membership")
        if self.reads:
            from domain.store.reads import PLANS

            if self.target is None:
                raise SpecError(
                    f"{self.name}: reads are read with the membership of one target (or of each item of a list target)"
                )
            unknown = [r for r in self.reads if r not in PLANS]
            if unknown:
                raise SpecError(f"{self.name}: unknown read plans {unknown} (domain.store.reads.PLANS)")
        if (self.replay is not None or self.marker) and (
            not self.keyed or (self.target is not None and self.target.each is not None)
        ):
            raise SpecError(
                f"{self.name}: replay answers a keyed create of one target (its workspace keys the marker) or of none"
            )
        if self.cas is not None and (self.cas not in fields or self.read_only):
            raise SpecError(f"{self.name}: cas names an argument of a writing tool")
        if self.precheck is not None and self.governed is None:
            raise SpecError(
                f"{self.name}: precheck runs before the governance gate; the handler checks ungoverned calls"
            )
        if self.fields_of is not None:
            if not self.read_only or "fields" not in fields or self.fields_of not in self.output_model.model_fields:
                raise SpecError(
                    f"{self.name}: fields_of names a result field of a read-only tool (and @tool adds the fields argument)"
                )
            if not self.allowed_fields:
                raise SpecError(f"{self.name}: the result field {self.fields_of!r} holds no model rows")
        if self.concise and self.fields_of is None:
            raise SpecError(f"{self.name}: concise rows need fields_of")
        if self.operator is not False:
            if self.target is None or self.target.each is not None or self.target.resolve is not None:
                raise SpecError(f"{self.name}: operator authority is checked in one workspace target")
            if isinstance(self.operator, str) and self.operator not in fields:
                raise SpecError(f"{self.name}: operator field {self.operator!r} is not an argument")
        if self.governed is not None:
            if self.target is None or self.target.each is not None or self.keyed:
                raise SpecError(f"{self.name}: a governed tool needs one workspace target and no idempotencyKey")
            out = self.output_model.model_fields
            if "status" not in out or "approval" not in out:
                raise SpecError(
                    f"{self.name}: a governed tool's output needs 'status' and 'approval' (the parked answer)"
                )

    @property
    def key_field(self) -> str:
        """The argument holding this tool's idempotency key (``idempotencyKey`` unless it takes ``idempotency_key``)."""
        fields = self.input_model.model_fields
        return next((k for k in KEY_FIELDS if k in fields), KEY_FIELDS[0])

    def load(self) -> ToolSpec:
        """This spec (a :class:`~domain.catalog.LazySpec` answers the real one): callers resolve
        once per call instead of forwarding every attribute."""
        return self

    def annotations(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": False,
        }

    @cached_property
    def allowed_fields(self) -> frozenset[str]:
        """The names ``fields`` accepts: the top-level fields of the projected rows' model(s)."""
        from domain.projection import row_models

        if self.fields_of is None:
            return frozenset()
        return frozenset(n for m in row_models(self.output_model, self.fields_of) for n in m.model_fields)

    @cached_property
    def _definition(self) -> dict[str, Any]:
        output = json_schema(self.output_model, mode="serialization")
        if self.fields_of is not None:
            from domain.projection import relax_rows

            relax_rows(output, self.fields_of)
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": lean(json_schema(self.input_model, mode="validation")),
            "outputSchema": output,
            "annotations": self.annotations(),
        }

    def definition(self) -> dict[str, Any]:
        """The MCP ``Tool`` object served by ``tools/list`` (built once per spec; treat as read-only)."""
        return self._definition

    @cached_property
    def nullable(self) -> frozenset[str]:
        """Top-level arguments that accept ``null`` although the inputSchema does not show it."""
        return nullable_fields(self.input_model)

    def id_fields(self) -> list[tuple[str, str, str]]:
        """Every id-taking argument as ``(field, kind, declared error)`` — target first, then refs."""
        out: list[tuple[str, str, str]] = []
        if self.target:
            for tf in self.target.fields:
                out.append((tf.field, tf.kind, "NOT_FOUND"))
        for ref in self.refs:
            out.append((ref.field, ref.kind, ref.error.value))
        return out


def tool(
    name: str,
    *,
    title: str,
    description: str,
    area: Area,
    scope: Scope,
    input_model: type[ToolInput],
    output_model: type[ToolOutput],
    **policy: Any,
) -> Callable[[Callable[..., Any]], ToolSpec]:
    """Declare ``handler(ctx, args) -> output_model | dict`` as the tool ``name``; returns the spec.

    ``policy`` takes the remaining :class:`ToolSpec` fields (flags, ``keyed``, ``target``,
    ``min_role``, ``refs``, ``refused_when_bound``, ``prefetch``, ``reads``, ``cas``, ``replay``, ``marker``, ``open_board``). Nothing is registered: list the
    spec in the module's ``TOOLS``.
    """

    if policy.get("fields_of") is not None:
        from domain.projection import with_fields_argument

        input_model = with_fields_argument(input_model)

    def declare(handler: Callable[..., Any]) -> ToolSpec:
        return ToolSpec(
            name=name,
            title=title,
            description=description.strip(),
            area=area,
            scope=scope,
            input_model=input_model,
            output_model=output_model,
            handler=handler,
            **policy,
        )

    return declare


class Registry:
    """An immutable set of tools, in the stable order ``tools/list`` pages through (by name)."""

    def __init__(self, specs: Iterable[ToolSpec]) -> None:
        by_name: dict[str, ToolSpec] = {}
        for spec in specs:
            if spec.name in by_name:
                raise SpecError(f"tool {spec.name} declared twice")
            by_name[spec.name] = spec
        self._by_name = by_name
        self._ordered = [by_name[k] for k in sorted(by_name)]

    def ordered(self) -> list[ToolSpec]:
        return list(self._ordered)

    def get(self, name: str) -> ToolSpec | None:
        return self._by_name.get(name)

    def names(self) -> list[str]:
        return [s.name for s in self._ordered]

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self._ordered)

    def __len__(self) -> int:
        return len(self._ordered)


def nullable_fields(model: type[BaseModel]) -> frozenset[str]:
    """The arguments of ``model`` that accept ``null`` (its optional ``X | None`` fields).

    Input schemas do not show it (see :func:`json_schema`); the server reads such a null as the
    field's description says — as omitted unless the description gives null a meaning.
    """
    props = model.model_json_schema(mode="validation").get("properties", {})
    return frozenset(name for name, sub in props.items() if any(b.get("type") == "null" for b in sub.get("anyOf", [])))


def _const_as_enum(out: dict[str, Any]) -> dict[str, Any]:
    """``const`` as a one-value ``enum`` (typed ``string`` for a text value), in place."""
    if "const" in out:
        value = out.pop("const")
        out.setdefault("enum", [value])
        if "type" not in out and isinstance(value, str):
            out["type"] = "string"
    return out


def _portable(node: dict[str, Any]) -> dict[str, Any]:
    """One input-schema node in the shape every major client accepts.

    ``anyOf [X, {type: null}]`` becomes X (keeping the node's description and bounds) and its
    ``default: null`` goes: optional means "not in ``required``". A type array loses ``null``
    the same way, and ``const`` becomes a one-value ``enum``.
    """
    out = dict(node)
    branches = out.get("anyOf")
    if isinstance(branches, list):
        kept = [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")]
        if len(kept) < len(branches) and len(kept) == 1 and isinstance(kept[0], dict):
            del out["anyOf"]
            out = {**kept[0], **out}
            if "default" in out and out["default"] is None:
                del out["default"]
    kind = out.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        out["type"] = kinds[0] if len(kinds) == 1 else kinds
        if "default" in out and out["default"] is None:
            del out["default"]
    return _const_as_enum(out)


LEAN_MAX_LENGTH = (
    2049  # string bounds up to 2048 are sanity caps (ids, names, titles, cursors): enforced, not published
)
LEAN_MAX_PATTERN = 16  # longer patterns (dates, timestamps) are described in words instead


def lean(schema: dict[str, Any]) -> dict[str, Any]:
    """An input schema with what costs a model tokens but tells it nothing (docs/decisions.md, "Lean definitions").

    The server still validates every bound with the pydantic model and names it in the error; the
    published schema drops ``minLength: 1``, ``maxLength`` below :data:`LEAN_MAX_LENGTH` and
    patterns longer than :data:`LEAN_MAX_PATTERN`, ``default: false`` on a boolean (absent is
    false) and ``additionalProperties: false`` at every level: it tells a model nothing, Gemini's
    function declarations refuse the keyword, and every object of an input is a pydantic
    ``ToolInput`` model, so an unknown argument is still INVALID_INPUT naming it. Types, enums,
    ``required``, numeric ranges, item counts and long text limits stay.
    """

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(x) for x in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for k, v in node.items():
            if k == "properties" and isinstance(v, dict):
                out[k] = {pk: walk(pv) for pk, pv in v.items()}
                continue
            if k == "default" and (v is None or (v is False and node.get("type") == "boolean")):
                continue
            if k == "additionalProperties" and v is False:
                continue
            if node.get("type") == "string" and not isinstance(v, dict):
                if k == "minLength" and v == 1:
                    continue
                if k == "maxLength" and isinstance(v, int) and v < LEAN_MAX_LENGTH:
                    continue
                if k == "pattern" and isinstance(v, str) and len(v) > LEAN_MAX_PATTERN:
                    continue
            out[k] = walk(v)
        return out

    return cast(dict[str, Any], walk(schema))


def json_schema(model: type[BaseModel], *, mode: str) -> dict[str, Any]:
    """The model's JSON Schema with every ``$ref`` inlined and pydantic's titles dropped.

    In validation mode (input schemas) every node is also made portable (:func:`_portable`):
    one ``type`` string per property and no ``anyOf``/``null``/``const``, which Gemini and some
    VS Code versions refuse. In serialization mode (output schemas) every node states its type
    too, nullable ones as ``[X, "null"]`` (:func:`portable_output`).
    """
    raw = model.model_json_schema(mode=mode)  # type: ignore[arg-type]
    defs = raw.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if mode == "validation":
                node = _portable(node)
            if "$ref" in node:
                target = copy.deepcopy(defs[node["$ref"].split("/")[-1]])
                extra = {k: v for k, v in node.items() if k != "$ref"}
                return walk({**target, **extra})
            out = {}
            for k, v in node.items():
                if k == "title" and isinstance(v, str):
                    continue
                if k == "properties":
                    out[k] = {pk: walk(pv) for pk, pv in v.items()}
                else:
                    out[k] = walk(v)
            return out
        if isinstance(node, list):
            return [walk(x) for x in node]
        return node

    schema: dict[str, Any] = walk(raw)
    if mode != "validation":
        schema = portable_output(schema)
    schema["type"] = "object"
    if mode == "validation":
        schema["additionalProperties"] = False
    return schema


PORTABLE_TYPES = ("string", "integer", "number", "boolean", "array", "object")


def _output_node(node: dict[str, Any]) -> dict[str, Any]:
    """One output-schema node (its children already made portable) with a ``type`` of its own.

    * ``anyOf [X, {type: null}]`` becomes X with ``type: [X's type, "null"]`` (an ``enum`` gains
      ``null``) and loses ``default: null``: the same values validate, and the node says its type;
    * ``anyOf`` of object branches (a detailed or a compact row) becomes one object holding every
      branch's properties, requiring what every branch requires (a property two branches spell
      differently is a :class:`SpecError`: the rows would not be one shape);
    * ``const`` becomes a one-value ``enum``.
    """
    out = dict(node)
    branches = out.get("anyOf")
    if isinstance(branches, list) and all(isinstance(b, dict) for b in branches):
        kept = [b for b in branches if b.get("type") != "null"]
        nullable = len(kept) < len(branches)
        if len(kept) > 1 and all(b.get("type") == "object" for b in kept):
            kept = [_merge_objects(kept)]
        if len(kept) == 1 and isinstance(kept[0].get("type"), str):
            del out["anyOf"]
            out = {**kept[0], **out}
            if nullable:
                out["type"] = [out["type"], "null"]
                if "enum" in out and None not in out["enum"]:
                    out["enum"] = [*out["enum"], None]
            if "default" in out and out["default"] is None:
                del out["default"]
    return _const_as_enum(out)


def _merge_objects(branches: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {"type": "object", "properties": {}}
    required: set[str] | None = None
    for branch in branches:
        for name, sub in branch.get("properties", {}).items():
            seen = merged["properties"].setdefault(name, sub)
            if seen != sub:
                raise SpecError(f"output rows spell {name!r} two ways; one schema cannot hold both")
        required = set(branch.get("required", [])) if required is None else required & set(branch.get("required", []))
        if branch.get("additionalProperties") is False:
            merged["additionalProperties"] = False
    order = [n for n in merged["properties"] if n in (required or set())]
    if order:
        merged["required"] = order
    return merged


def portable_output(schema: Any) -> Any:
    """An output schema in which every property states its ``type`` (issue 24, item 12).

    pydantic writes an optional field as ``anyOf [X, {type: null}]`` with no type of its own,
    which strict clients refuse; here it is ``type: [X, "null"]`` (a nullable field still answers
    ``null``: the contract keeps its nulls). Applied bottom-up, so a merged row's properties are
    already portable. See docs/decisions.md, "Output schemas state their types".
    """
    if isinstance(schema, list):
        return [portable_output(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for k, v in schema.items():
        if k == "properties" and isinstance(v, dict):
            out[k] = {pk: portable_output(pv) for pk, pv in v.items()}
        else:
            out[k] = portable_output(v)
    return _output_node(out)
