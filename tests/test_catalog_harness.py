"""The harness every registered tool goes through, derived from the registry alone.

Nothing here lists tools: a tool added to the catalog is covered the day it lands, from its
spec (scope class, target, min_role, refs) and its inputSchema. Calls go through the real
protocol layer and pipeline in this process (``McpProtocol.handle``) against DynamoDB Local:

* scope matrix — read, write and admin tokens against every tool: exactly the tools above a
  token's scope answer the FORBIDDEN envelope, and those calls write nothing;
* role matrix — MEMBER, ADMIN and OWNER against every tool with a ``min_role``;
* tenant isolation — every id-taking argument (target alternatives and refs) filled with an id
  of another user's workspace answers its declared error, never data, and writes nothing;
* schema fuzz — inputs generated from each inputSchema (wrong types, missing and extra fields,
  boundary lengths, unicode with lone surrogates): 0 INTERNAL, 0 answers that are not a result
  or an envelope, and the storage fingerprint unchanged across the inputs the schema rejects
  (``JENTRIX_FUZZ_EXAMPLES`` raises the CI-sized count);
* every success result in this module validates against the tool's outputSchema (2020-12).
"""

from __future__ import annotations

import itertools
import json
import os
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from domain import auth, toolsets
from domain.access import TargetField
from domain.auth import ROLE_RANK, SCOPES
from domain.catalog import registry as product_registry
from domain.registry import ToolSpec, json_schema
from functions.protocol import McpProtocol, Session
from tests.conftest import make_actor
from tests.test_input_validation import table_fingerprint

REGISTRY = product_registry()
SPECS = REGISTRY.ordered()
PROTOCOL = McpProtocol(registry=REGISTRY)
# every toolset, the opt-in ones (coordination) too, as jentrix mcp serves them
SERVE_ALL = (toolsets.OPT_IN_ON,)
FUZZ_EXAMPLES = int(os.environ.get("JENTRIX_FUZZ_EXAMPLES", "12"))
_ids = itertools.count(1)


# -- the world -------------------------------------------------------------------------------------
@dataclass
class Place:
    """Ids of one workspace's entities, by kind."""

    workspace: str
    board: str
    column: str
    other_column: str
    task: str
    other_task: str
    comment: str
    subtask: str
    label: str
    project: str
    invitation: str
    artifact: str
    session: str

    def of(self, kind: str) -> str:
        return {
            "workspace": self.workspace,
            "board": self.board,
            "column": self.column,
            "task": self.task,
            "comment": self.comment,
            "subtask": self.subtask,
            "label": self.label,
            "project": self.project,
            "invitation": self.invitation,
            "artifact": self.artifact,
            "session": self.session,
        }[kind]


@dataclass
class World:
    mine: Place
    theirs: Place
    tokens: dict[str, str]  # "scope:read" / "role:MEMBER" ... -> secret
    user_id: str
    member_ids: dict[str, str]  # role -> userId of the world's other members


def _call(secret: str, name: str, arguments: Any) -> dict[str, Any]:
    """One tools/call through the protocol layer; returns the CallToolResult (checked for shape)."""
    principal = auth.authenticate(secret)
    assert principal is not None
    reply = PROTOCOL.handle(
        {"jsonrpc": "2.0", "id": next(_ids), "method": "tools/call", "params": {"name": name, "arguments": arguments}},
        headers=None,
        session=Session(principal=principal, transport="test", layers=SERVE_ALL),
    )
    message = reply.message
    assert message is not None and "result" in message, message
    result = message["result"]
    text = result["content"][0]["text"]
    if result["isError"]:
        assert "structuredContent" not in result
        error = json.loads(text)["error"]
        assert set(error) >= {"code", "message", "hint"}, error
        assert error["code"] != "INTERNAL", (name, arguments, error)
    else:
        schema = REGISTRY.get(name).definition()["outputSchema"]
        errors = sorted(Draft202012Validator(schema).iter_errors(result["structuredContent"]), key=str)
        assert not errors, (name, errors[0].message)
        assert json.loads(text) == result["structuredContent"]
    return result


def _error(result: dict[str, Any]) -> dict[str, Any] | None:
    return json.loads(result["content"][0]["text"])["error"] if result["isError"] else None


def _place(secret: str, workspace_id: str) -> Place:
    board = _ok(secret, "create_board", {"workspaceId": workspace_id, "name": f"Harness {uuid.uuid4().hex[:12]}"})
    cols = [c["id"] for c in board["columns"]]
    t1 = _ok(secret, "create_task", {"columnId": cols[0], "title": "harness one"})["task"]
    t2 = _ok(secret, "create_task", {"columnId": cols[0], "title": "harness two"})["task"]
    comment = _ok(secret, "create_comment", {"taskId": t1["id"], "body": "harness comment"})["comment"]
    subtask = _ok(secret, "create_subtask", {"taskId": t1["id"], "title": "harness subtask"})["subtask"]
    label = _ok(
        secret,
        "manage_labels",
        {"action": "create", "boardId": board["board"]["id"], "name": "harness", "color": "#123456"},
    )["label"]
    project = _ok(secret, "create_project", {"workspaceId": workspace_id, "name": f"Harness {uuid.uuid4().hex[:12]}"})[
        "project"
    ]
    invitation = _ok(
        secret, "invite_member", {"workspaceId": workspace_id, "email": f"invitee-{uuid.uuid4().hex[:12]}@example.com"}
    )["invitation"]
    _ok(secret, "add_project_link", {"projectId": project["id"], "targetType": "REPO", "targetId": "harness/repo"})
    session = _ok(
        secret,
        "create_agent_session",
        {"projectId": project["id"], "repo": "harness/repo", "idempotencyKey": uuid.uuid4().hex},
    )["session"]
    artifact = _ok(
        secret,
        "attach_artifact",
        {
            "workspaceId": workspace_id,
            "type": "PR",
            "title": "harness",
            "url": "https://example.com/pr",
            "projectId": project["id"],
        },
    )["artifact"]
    return Place(
        workspace_id,
        board["board"]["id"],
        cols[0],
        cols[1],
        t1["id"],
        t2["id"],
        comment["id"],
        subtask["id"],
        label["id"],
        project["id"],
        invitation["id"],
        artifact["id"],
        session["id"],
    )


def _ok(secret: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = _call(secret, name, arguments)
    assert not result["isError"], result["content"][0]["text"]
    return result["structuredContent"]


@pytest.fixture(scope="module")
def world(stack) -> World:
    from domain.store import keys, members
    from domain.store.models import UserRow

    tag = uuid.uuid4().hex[:12]
    me = make_actor("Harness", f"Harness {tag}")
    other = make_actor("Stranger", f"Stranger {tag}")
    # The world's workspaces let agents' membership changes through (policy ALLOW), so every
    # matrix below reaches the governed tools' handlers; test_governed_tools_park_or_refuse_agents
    # covers the parked and refused answers of the other policies, tool by tool.
    from domain.store import governance

    for actor in (me, other):
        governance.set_policy(actor.workspace_id, "membership", "ALLOW", actor_id=actor.user_id, source="ui")
    tokens = {f"scope:{s}": auth.mint_pat(me.user_id, scopes=[s])[0] for s in SCOPES}
    tokens["role:OWNER"] = me.token
    member_ids = {}
    for role in ("MEMBER", "ADMIN"):
        user = auth.create_user(f"{role.lower()}-{uuid.uuid4().hex[:12]}@example.com", f"{role.title()} User")
        members.add(me.workspace_id, UserRow.get(*keys.user_profile(user.userId)), role)
        tokens[f"role:{role}"] = auth.mint_pat(user.userId)[0]
        tokens[f"human:{role}"] = auth.mint_pat(user.userId, holder="human")[0]
        member_ids[role] = user.userId
    tokens["human:OWNER"] = auth.mint_pat(me.user_id, holder="human")[0]
    return World(
        _place(me.token, me.workspace_id), _place(other.token, other.workspace_id), tokens, me.user_id, member_ids
    )


@pytest.fixture(autouse=True)
def board_restored(world):
    """archive_board runs on the world's board like every other tool; restore it after each test,
    so the next tool's calls meet a board that takes writes (the restore of an active board writes nothing)."""
    yield
    for place, secret in ((world.mine, world.tokens["role:OWNER"]),):
        _ok(secret, "unarchive_boards", {"workspaceId": place.workspace, "boardIds": [place.board]})


# -- arguments from the schema and the declarations --------------------------------------------------
def _sample(schema: dict[str, Any]) -> Any:
    """A small value the schema accepts (for required arguments the declarations do not cover)."""
    branch = next((b for b in schema.get("anyOf", []) if b.get("type") != "null"), schema)
    if "enum" in branch:
        return branch["enum"][0]
    kind = branch.get("type")
    if kind == "string":
        if branch.get("pattern", "").startswith(
            "^\\d{4}-"
        ):  # a required timestamp (expectedUpdatedAt): one of that shape
            return "2026-01-01T00:00:00.000Z"
        return "x" * max(1, branch.get("minLength", 1))
    if kind == "integer":
        return max(1, branch.get("minimum", 1))
    if kind == "boolean":
        return False
    if kind == "array":
        return [_sample(branch.get("items", {})) for _ in range(branch.get("minItems", 0))]
    if kind == "object":
        return {
            name: _sample(sub)
            for name, sub in branch.get("properties", {}).items()
            if name in branch.get("required", [])
        }
    return None


WELL_FORMED_USER = "usr_" + "a" * 12  # the shape of a user id, nobody's


def valid_args(spec: ToolSpec, place: Place, alternative: TargetField | None = None) -> dict[str, Any]:
    """Arguments that pass validation and name ``place``'s entities through ``alternative``
    (default: the target's first alternative)."""
    schema = json_schema(spec.input_model, mode="validation")  # the full bounds: the published schema is lean
    args = {name: _sample(schema["properties"][name]) for name in schema.get("required", [])}
    for key_field in (
        "idempotencyKey",
        "idempotency_key",
    ):  # a required key (create/attach_agent_session, the coordination
        if key_field in args:  # tools): a fresh one per call, never a replay
            args[key_field] = uuid.uuid4().hex
    # a typed id (project links' targetType + targetId) names place's entity of that type: a
    # malformed one is refused before the access step (issue 24), so it would hide the role check
    if (
        isinstance(args.get("targetType"), str)
        and "targetId" in args
        and args["targetType"].lower() in ("board", "task")
    ):
        args["targetId"] = place.of(args["targetType"].lower())
    for ref in spec.refs:  # a required id list (unarchive_boards' boardIds) gets one of place's ids
        if ref.field in args and ref.kind in (
            "workspace",
            "board",
            "column",
            "task",
            "comment",
            "label",
            "project",
            "invitation",
            "session",
            "artifact",
        ):
            args[ref.field] = [place.of(ref.kind)] if ref.many else place.of(ref.kind)
        elif ref.field in args and ref.kind == "user":  # well-formed (a malformed one is refused before the role check)
            args[ref.field] = [WELL_FORMED_USER] if ref.many else WELL_FORMED_USER
    if spec.target is not None:
        alt = alternative or spec.target.fields[0]
        if spec.target.each is None:
            args[alt.field] = place.of(alt.kind)
            args.update(dict(alt.with_args))
        else:  # a list target: one item naming place's entity (and a column of its board, if items take one)
            item = _sample(schema["properties"][alt.field]["items"])
            item[spec.target.each] = place.of(alt.kind)
            if "columnId" in item:
                item["columnId"] = place.other_column
            args[alt.field] = [item]
    return args


def _per_item_error(spec: ToolSpec, result: dict[str, Any]) -> dict[str, Any] | None:
    """The error of a call, or for a tool with per-item results (a list target that is not
    all-or-nothing) the error its single item's result carries."""
    if spec.target is None or spec.target.each is None or spec.target.all_or_nothing or result["isError"]:
        return _error(result)
    return result["structuredContent"]["results"][0]["error"]


def _scope_refused(error: dict[str, Any] | None) -> bool:
    return bool(error) and error["code"] == "FORBIDDEN" and "scope" in error["message"]


def _role_refused(error: dict[str, Any] | None, role: str) -> bool:
    return bool(error) and error["code"] == "FORBIDDEN" and "role" in error["message"] and role in error["message"]


# -- scope matrix ------------------------------------------------------------------------------------
def test_scope_matrix_refuses_exactly_the_tools_above_each_scope(world):
    refused: list[tuple[str, str]] = []
    before = table_fingerprint()
    for scope in SCOPES:
        for spec in SPECS:
            if SCOPES.index(spec.scope) > SCOPES.index(scope):
                error = _error(_call(world.tokens[f"scope:{scope}"], spec.name, valid_args(spec, world.mine)))
                assert _scope_refused(error), (scope, spec.name, error)
                refused.append((scope, spec.name))
    assert table_fingerprint() == before, "a call refused for its scope wrote to the table"
    for scope in SCOPES:
        for spec in SPECS:
            if SCOPES.index(spec.scope) <= SCOPES.index(scope):
                error = _error(_call(world.tokens[f"scope:{scope}"], spec.name, valid_args(spec, world.mine)))
                assert not _scope_refused(error), (scope, spec.name, error)
    expected = {(s, t.name) for s in SCOPES for t in SPECS if SCOPES.index(t.scope) > SCOPES.index(s)}
    assert set(refused) == expected


# -- role matrix -------------------------------------------------------------------------------------
ROLE_SPECS = [s for s in SPECS if s.min_role is not None]


@pytest.mark.parametrize("spec", ROLE_SPECS, ids=lambda s: s.name)
def test_role_matrix(world, spec):
    for role in ("MEMBER", "ADMIN", "OWNER"):
        args = valid_args(spec, world.mine)
        if ROLE_RANK[role] < ROLE_RANK[spec.min_role]:
            before = table_fingerprint()
            error = _error(_call(world.tokens[f"role:{role}"], spec.name, args))
            assert _role_refused(error, spec.min_role), (role, error)
            assert table_fingerprint() == before
        else:
            error = _error(_call(world.tokens[f"role:{role}"], spec.name, args))
            assert not _role_refused(error, spec.min_role), (role, error)  # (author-only rules may still refuse)


# -- tenant isolation --------------------------------------------------------------------------------
def _isolation_cases() -> list[Any]:
    cases = []
    for spec in SPECS:
        if spec.target is None:
            continue
        for alt in spec.target.fields:
            cases.append(pytest.param(spec, alt, None, id=f"{spec.name}-{alt.field}"))
        for ref in spec.refs:
            cases.append(pytest.param(spec, None, ref, id=f"{spec.name}-{ref.field}"))
    return cases


def _foreign_value(kind: str, theirs: Place) -> str | None:
    return {
        "workspace": theirs.workspace,
        "board": theirs.board,
        "column": theirs.column,
        "task": theirs.task,
        "comment": theirs.comment,
        "subtask": theirs.subtask,
        "label": theirs.label,
        "project": theirs.project,
        "invitation": theirs.invitation,
        "artifact": theirs.artifact,
        "session": theirs.session,
    }.get(kind)


@pytest.mark.parametrize(("spec", "alt", "ref"), _isolation_cases())
def test_foreign_ids_get_their_declared_error_and_write_nothing(world, spec, alt, ref):
    if alt is not None:
        args = valid_args(spec, world.mine, alt)
        if spec.target.each is None:
            args[alt.field] = _foreign_value(alt.kind, world.theirs)
        else:
            args[alt.field] = [{**args[alt.field][0], spec.target.each: _foreign_value(alt.kind, world.theirs)}]
        expected = "NOT_FOUND"
        field_name = alt.field
    else:
        foreign = _foreign_value(ref.kind, world.theirs)
        if foreign is None:
            pytest.skip(f"{ref.kind} ids carry no workspace; the handler checks them (tool tests cover it)")
        args = valid_args(spec, world.mine)
        args[ref.field] = [foreign] if ref.many else foreign
        expected = ref.error.value
        field_name = ref.field
    before = table_fingerprint()
    result = _call(world.tokens["role:OWNER"], spec.name, args)
    error = _per_item_error(spec, result)
    assert error is not None, f"{spec.name} answered data for a foreign {field_name}"
    assert error["code"] == expected, (field_name, error)
    if expected == "INVALID_INPUT":
        assert error["message"].split(":", 1)[0] == field_name, error
    assert table_fingerprint() == before


def test_isolation_cases_cover_every_id_argument():
    """Every argument a spec declares as an id is probed (the list above is derived, not kept)."""
    probed = {(c.values[0].name, (c.values[1] or c.values[2]).field) for c in _isolation_cases()}
    declared = {(s.name, f) for s in SPECS for f, _, _ in s.id_fields()}
    assert probed == declared


# -- operator authority (domain.operator) ------------------------------------------------------------
OPERATOR_SPECS = [s for s in SPECS if s.operator is not False]


def _operator_args(spec: ToolSpec, place: Place) -> dict[str, Any]:
    args = valid_args(spec, place)
    if isinstance(spec.operator, str):  # a flag argument switches the need on
        args[spec.operator] = True
    return args


@pytest.mark.parametrize("spec", OPERATOR_SPECS, ids=lambda s: s.name)
def test_operator_tools_refuse_every_caller_but_a_human_operator(world, spec):
    """Agents' credentials (even the OWNER's) and human MEMBERs and ADMINs are FORBIDDEN before
    the handler runs, writing nothing; a human OWNER passes the access step."""
    args = _operator_args(spec, world.mine)
    for who in ("role:OWNER", "role:ADMIN", "human:MEMBER", "human:ADMIN"):
        before = table_fingerprint()
        error = _error(_call(world.tokens[who], spec.name, args))
        assert error is not None and error["code"] == "FORBIDDEN" and "operator authority" in error["message"], (
            who,
            error,
        )
        assert table_fingerprint() == before
    error = _error(_call(world.tokens["human:OWNER"], spec.name, args))
    assert error is None or "operator authority" not in error["message"], error


# -- governance -------------------------------------------------------------------------------------
GOVERNED = [s for s in SPECS if s.governed is not None]


@pytest.mark.parametrize("spec", GOVERNED, ids=lambda s: s.name)
def test_governed_tools_park_or_refuse_agents(world, spec):
    """Under REQUIRE_APPROVAL an agent's call of a governed tool writes one approval request and
    answers PENDING_APPROVAL (a result, valid against the outputSchema); repeating it answers the
    same request; under DENY it is FORBIDDEN and writes nothing."""
    from domain.store import governance
    from tests.tools_support import stored_state

    ws = world.mine.workspace
    args = valid_args(spec, world.mine)
    # arguments the tool's precheck accepts (a real member, a real address), so the gate is reached
    if "userId" in args:
        args["userId"] = world.member_ids["MEMBER"]
    if "email" in args:
        args["email"] = f"gated-{uuid.uuid4().hex[:12]}@example.com"
    try:
        governance.set_policy(ws, spec.governed, "REQUIRE_APPROVAL", actor_id=world.user_id, source="ui")
        before = stored_state()
        first = _call(world.tokens["role:OWNER"], spec.name, args)
        assert not first["isError"], first
        out = first["structuredContent"]
        assert (
            out["status"] == "PENDING_APPROVAL"
            and out["approval"]["tool"] == spec.name
            and out["approval"]["newRequest"]
        )
        added = set(stored_state()) - set(before)
        assert len(added) == 1, added
        again = _call(world.tokens["role:OWNER"], spec.name, args)["structuredContent"]
        assert again["approval"]["id"] == out["approval"]["id"] and not again["approval"]["newRequest"]
        governance.set_policy(ws, spec.governed, "DENY", actor_id=world.user_id, source="ui")
        before = table_fingerprint()
        error = _error(_call(world.tokens["role:OWNER"], spec.name, args))
        assert error is not None and error["code"] == "FORBIDDEN", error
        assert table_fingerprint() == before
    finally:
        governance.set_policy(ws, spec.governed, "ALLOW", actor_id=world.user_id, source="ui")


# -- schema fuzz -------------------------------------------------------------------------------------
TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=12) | st.sampled_from(
    ["", " ", "\ud800", "a\udfffb", "👩‍💻", "ws_", "'; DROP TABLE", "\u200b", "%00"]
)
WRONG = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63),
    st.floats(allow_nan=False),
    TEXT,
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def _value(schema: dict[str, Any], place: Place, name: str, spec: ToolSpec) -> st.SearchStrategy[Any]:
    """Values around what ``schema`` accepts: real ids for id fields, boundary lengths, unicode."""
    branches = [b for b in schema.get("anyOf", [schema]) if b.get("type") != "null"]
    nullable = name in spec.nullable  # the server accepts null there; the portable schema does not show it
    options: list[st.SearchStrategy[Any]] = []
    for b in branches:
        if "enum" in b:
            options.append(st.sampled_from(b["enum"]))
        elif b.get("type") == "string":
            lo, hi = b.get("minLength", 0), b.get("maxLength", 64)
            ids_here = [
                place.workspace,
                place.board,
                place.column,
                place.other_column,
                place.task,
                place.other_task,
                place.comment,
                place.subtask,
                place.label,
                place.project,
                place.invitation,
                place.session,
                place.artifact,
                "",
            ]
            options += [
                st.sampled_from(ids_here),
                TEXT,
                st.sampled_from([lo, max(lo, hi), hi + 1]).map(lambda n: "é" * n),
            ]
            if "pattern" in b:
                options.append(st.from_regex(b["pattern"], fullmatch=True))
        elif b.get("type") == "integer":
            lo, hi = b.get("minimum", -5), b.get("maximum", 10**6)
            options.append(st.sampled_from([lo - 1, lo, hi, hi + 1, 0, 1]) | st.integers(lo, min(hi, lo + 1000)))
        elif b.get("type") == "boolean":
            options.append(st.booleans())
        else:
            options.append(WRONG)
    if nullable:
        options.append(st.none())
    return st.one_of(*options)


def _inputs(spec: ToolSpec, place: Place) -> st.SearchStrategy[Any]:
    schema = spec.definition()["inputSchema"]
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    fields = {name: _value(sub, place, name, spec) for name, sub in props.items()}

    @st.composite
    def build(draw: Any) -> Any:
        args: dict[str, Any] = {}
        for name, strat in fields.items():
            if name in required or draw(st.booleans()):
                args[name] = draw(strat)
        mutation = draw(st.sampled_from(["none", "none", "wrong-type", "drop-required", "extra", "not-object"]))
        if mutation == "wrong-type" and props:
            args[draw(st.sampled_from(sorted(props)))] = draw(WRONG)
        elif mutation == "drop-required" and required:
            args.pop(draw(st.sampled_from(sorted(required))), None)
        elif mutation == "extra":
            args[draw(st.sampled_from(["surprise", "workspaceID", "__proto__", "idempotency_key"]))] = draw(WRONG)
        elif mutation == "not-object":
            return draw(st.one_of(st.lists(st.integers(), max_size=2), TEXT, st.integers(), st.booleans()))
        return args

    return build()


def _schema_accepts(spec: ToolSpec, arguments: Any) -> bool:
    """Whether the server's documented contract accepts ``arguments``: the inputSchema, plus
    ``null`` on the optional arguments (``spec.nullable``), which portable schemas leave out."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return False
    arguments = {k: v for k, v in arguments.items() if not (v is None and k in spec.nullable)}
    return not any(Draft202012Validator(spec.definition()["inputSchema"]).iter_errors(arguments))


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_schema_fuzz(world, spec):
    secret = world.tokens["role:OWNER"]
    rejected: list[Any] = []
    accepted: list[Any] = []

    @settings(max_examples=FUZZ_EXAMPLES * 3, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(_inputs(spec, world.mine))
    def collect(arguments: Any) -> None:
        (accepted if _schema_accepts(spec, arguments) else rejected).append(arguments)

    collect()
    before = table_fingerprint()
    for arguments in rejected[: FUZZ_EXAMPLES * 2]:
        error = _error(_call(secret, spec.name, arguments))
        assert error is not None and error["code"] in ("INVALID_INPUT", "NOT_FOUND", "FORBIDDEN"), (arguments, error)
    assert table_fingerprint() == before, "an input the schema rejects wrote to the table"
    for arguments in accepted[:FUZZ_EXAMPLES]:
        _call(secret, spec.name, arguments)  # may succeed or fail, never INTERNAL, always a valid shape
    assert rejected, "the fuzzer produced no rejected input"
