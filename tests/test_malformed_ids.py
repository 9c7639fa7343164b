"""A malformed id is refused before any storage work, for every id argument of every tool.

Every argument of the registry's input schemas whose name ends in ``Id``/``Ids`` (top level and
in list items) is filled, one at a time, with values that cannot be an id of the kind it takes:
an emoji, the empty string, a value of the right shape with another kind's prefix, another kind's
real id, and a string past the argument's maximum length. Each call must answer an error
envelope (NOT_FOUND worded as for a missing id, or INVALID_INPUT naming the argument; per-item
errors for bulk tools that answer per item), never INTERNAL, and must make no DynamoDB request
of its own: a botocore counter (tests/rpc.py, extended to the request parameters) sees only the
rate-window UpdateItem, which every call makes by design (docs/rate-limits.md). So a malformed id
costs one write and one round trip whatever the store is doing, where a refusal after the
membership read waited on the store (up to the 24 s per-request worst case while it stalled).

Arguments that are not entity ids (ids a client or a provider chose: ``threadId``, ``runId``,
``decisionId``, ``workOrderId``) are listed in :data:`FREE_FORM` and skipped; a new ``…Id``
argument fails :func:`test_every_id_argument_is_probed` until it is probed or listed there.
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from typing import Any

import pytest

from domain import auth, pipeline
from domain.catalog import registry as product_registry
from domain.registry import ToolSpec, json_schema
from tests.conftest import make_actor
from tests.test_catalog_harness import Place, _place, valid_args

REGISTRY = product_registry()
SPECS = REGISTRY.ordered()
FREE_FORM = {"threadId", "runId", "decisionId", "workOrderId"}


def _id_fields(spec: ToolSpec) -> list[tuple[str, str | None, dict[str, Any]]]:
    """``(field, item field or None, schema)`` of every id argument of ``spec``."""
    schema = json_schema(spec.input_model, mode="validation")
    out = []
    for name, sub in schema.get("properties", {}).items():
        branch = next((b for b in sub.get("anyOf", [sub]) if b.get("type") != "null"), sub)
        if branch.get("type") == "array" and isinstance(branch.get("items"), dict):
            items = branch["items"]
            if items.get("type") == "object":
                for inner, inner_schema in items.get("properties", {}).items():
                    if inner.endswith("Id") and inner not in FREE_FORM:
                        out.append((name, inner, inner_schema))
                continue
            if name.endswith("Ids"):
                out.append((name, None, items))
            continue
        if name.endswith("Id") and name not in FREE_FORM:
            out.append((name, None, branch))
    return out


CASES = [(spec, field, inner, schema) for spec in SPECS for field, inner, schema in _id_fields(spec)]


def test_every_id_argument_is_probed():
    named = {
        (s.name, f)
        for s in SPECS
        for f in json_schema(s.input_model, mode="validation").get("properties", {})
        if f.endswith(("Id", "Ids"))
    }
    probed = {(c[0].name, c[1]) for c in CASES} | {(s.name, f) for s in SPECS for f in FREE_FORM}
    assert named <= probed


class RequestLog:
    """Every DynamoDB request the app's botocore clients make: operation and parameters."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()

    def _on_call(self, model: Any = None, params: Any = None, **_: Any) -> None:
        with self._lock:
            self.calls.append((model.name, params or {}))

    def own(self) -> Counter[str]:
        """The requests other than the rate-window UpdateItem."""
        out: Counter[str] = Counter()
        for op, params in self.calls:
            pk = ((params.get("Key") or {}).get("PK") or {}).get("S", "")
            if op == "UpdateItem" and pk.startswith("RATE#"):
                continue
            out[op] += 1
        return out

    def __enter__(self) -> RequestLog:
        from domain.store import db

        self._clients = db.botocore_clients()
        for c in self._clients:
            c.meta.events.register("before-parameter-build.dynamodb", self._on_call)
        return self

    def __exit__(self, *exc: Any) -> None:
        for c in self._clients:
            c.meta.events.unregister("before-parameter-build.dynamodb", self._on_call)


@pytest.fixture(scope="module")
def place(stack) -> tuple[Any, Place]:
    from domain.store import governance

    me = make_actor("Malformed", f"Malformed {uuid.uuid4().hex[:12]}")
    governance.set_policy(me.workspace_id, "membership", "ALLOW", actor_id=me.user_id, source="ui")
    principal = auth.authenticate(me.token)
    return principal, _place(me.token, me.workspace_id)


def _bad_values(field: str, schema: dict[str, Any], here: Place) -> list[str]:
    other_kind = here.column if "task" in field.lower() else here.task
    longest = schema.get("maxLength", 80)
    # "" is no malformed workspaceId: it names the caller's only workspace (docs/data-model.md)
    empty = [] if field == "workspaceId" else [""]
    return ["😀", *empty, "zz_" + here.task[3:], other_kind, "tk_" + "a" * (longest + 1)]


def _with(args: dict[str, Any], field: str, inner: str | None, value: str, many: bool) -> dict[str, Any]:
    args = dict(args)
    if inner is not None:
        items = args.get(field) or [{}]
        args[field] = [{**items[0], inner: value}]
    elif many:
        args[field] = [value]
    else:
        args[field] = value
    return args


def _errors(spec: ToolSpec, outcome: pipeline.CallOutcome) -> list[dict[str, Any]]:
    if outcome.error is not None:
        return [outcome.error["error"]]
    results = (outcome.result or {}).get("results")
    if isinstance(results, list) and results:
        return [r["error"] for r in results if r.get("error")]
    return []


@pytest.mark.parametrize(
    ("spec", "field", "inner", "schema"), CASES, ids=[f"{c[0].name}-{c[1]}{'.' + c[2] if c[2] else ''}" for c in CASES]
)
def test_a_malformed_id_is_refused_without_a_request(place, spec, field, inner, schema):
    principal, here = place
    base = valid_args(spec, here)
    many = inner is None and field.endswith("Ids")
    for value in _bad_values(inner or field, schema, here):
        args = _with(base, field, inner, value, many)
        with RequestLog() as log:
            outcome = pipeline.call_tool(spec, args, principal)
        found = _errors(spec, outcome)
        assert found, f"{spec.name} {field}={value!r} answered data: {outcome.result}"
        assert all(e["code"] in ("NOT_FOUND", "INVALID_INPUT") for e in found), (field, value, found)
        assert not log.own(), f"{spec.name} {field}={value!r}: {dict(log.own())} -> {found}"
