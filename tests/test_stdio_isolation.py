"""A bound stdio connection never reaches another workspace of the same user (issue 24).

One user belongs to workspaces A and C; an unpinned token of theirs runs ``jentrix mcp
--workspace A`` in both stdio modes: in process, and as the bridge (``--url``) to a real local
HTTP server. Over that one connection per mode, every catalog tool that takes an id is called
with ids of C (the cases are derived from the registry: every target alternative and every ref),
and the target-less tools with arguments that would find C's data. Every answer must be a
refusal (or, for a target-less read, an answer that names nothing of C), and the tables must be
byte-identical afterwards. ``resources/read`` of C's artifact is refused the same way.

The in-process connection also re-checks its token before ``resources/read``: once the token is
revoked, artifact bodies stop coming back, as ``tools/call`` answers stop.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from domain.catalog import registry as product_registry
from tests.conftest import Actor, make_actor
from tests.stdio_support import Adapter, adapter_env, error_of
from tests.test_catalog_harness import Place, _per_item_error, _place, valid_args
from tests.test_input_validation import table_fingerprint

REGISTRY = product_registry()
SPECS = REGISTRY.ordered()
# Argument values that make a target-less tool look for the data _place creates (by argument
# name, not by tool): C's project links the repository harness/repo.
TOWARDS_C = {"repo": "https://github.com/harness/repo"}
REFUSED = {"NOT_FOUND", "FORBIDDEN"}


@dataclass
class Worlds:
    user: Actor
    a: Place
    c: Place

    @property
    def c_part(self) -> str:
        """C's 12-character workspace part: every id of C, and every item key of C, contains it."""
        return self.c.workspace[3:]


@pytest.fixture(scope="module")
def worlds(stack) -> Worlds:
    from domain.store import governance as governance_store
    from domain.store.models import UserRow
    from domain.store.workspaces import create as create_workspace_rows

    user = make_actor("Two Spaces", f"Space A {uuid.uuid4().hex[:12]}")
    c_row, _ = create_workspace_rows(UserRow.get(f"USER#{user.user_id}", "PROFILE"), f"Space C {uuid.uuid4().hex[:12]}")
    for ws in (
        user.workspace_id,
        c_row.workspaceId,
    ):  # membership tools reach their handlers (as in the catalog harness)
        governance_store.set_policy(ws, "membership", "ALLOW", actor_id=user.user_id, source="ui")
    from domain.search import repair

    worlds = Worlds(user, _place(user.token, user.workspace_id), _place(user.token, c_row.workspaceId))
    # Indexing runs after the request (the stream consumer; in process, the adapter's repair loop):
    # apply the places' pending search records now, so the tables the test compares are settled.
    for ws in (worlds.a.workspace, worlds.c.workspace):
        repair.drain(ws)
    return worlds


@pytest.fixture(scope="module", params=["in-process", "bridge"])
def connection(request, stack, worlds) -> Iterator[Adapter]:
    """One connection per mode for the whole module, bound to A with the unpinned token."""
    if request.param == "in-process":
        a = Adapter(["--workspace", worlds.a.workspace], adapter_env(stack, worlds.user.token))
    else:
        server_url = request.getfixturevalue("server_url")
        a = Adapter(["--url", server_url, "--workspace", worlds.a.workspace], adapter_env(None, worlds.user.token))
    with a:
        a.initialize()
        yield a


# -- the cases, from the registry -------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    tool: str
    field: str | None  # the id argument aimed at C (None: a target-less tool)
    arguments: dict[str, Any]
    expected: frozenset[str]  # error codes that count as refusing


def cases(w: Worlds) -> list[Case]:
    out: list[Case] = []
    for spec in SPECS:
        if spec.target is None:
            args = valid_args(spec, w.a)
            args.update({k: v for k, v in TOWARDS_C.items() if k in spec.input_model.model_fields})
            out.append(Case(spec.name, None, args, frozenset()))
            continue
        for alt in spec.target.fields:  # the whole call in C: every id of it names C's entities
            out.append(Case(spec.name, alt.field, valid_args(spec, w.c, alt), frozenset(REFUSED)))
        for ref in spec.refs:  # the target in A, one secondary id in C: its declared answer
            if ref.kind == "user":  # user ids carry no workspace (the tools' own tests cover them)
                continue
            args = valid_args(spec, w.a)
            args[ref.field] = [w.c.of(ref.kind)] if ref.many else w.c.of(ref.kind)
            out.append(Case(spec.name, ref.field, args, frozenset({ref.error.value})))
    return out


def test_the_cases_cover_every_tool_and_every_id_argument(worlds):
    built = cases(worlds)
    assert {c.tool for c in built} == {s.name for s in SPECS}
    declared = {(s.name, f) for s in SPECS for f, kind, _ in s.id_fields() if kind != "user"}
    assert {(c.tool, c.field) for c in built if c.field is not None} == declared


def test_a_bound_connection_reaches_nothing_of_another_workspace_of_the_same_user(worlds, connection):
    before = table_fingerprint()
    leaks: list[str] = []
    for case in cases(worlds):
        result = connection.call(case.tool, case.arguments)
        text = result["content"][0]["text"]
        spec = REGISTRY.get(case.tool)
        if case.field is None:  # a target-less tool: a refusal, or an answer that names nothing of C
            if not result["isError"] and worlds.c_part in text:
                leaks.append(f"{case.tool}: answered with C's data: {text[:200]}")
            continue
        error = _per_item_error(spec, result)
        if error is None:
            leaks.append(f"{case.tool}({case.field}=C): answered {text[:200]}")
        elif error["code"] not in case.expected:
            leaks.append(
                f"{case.tool}({case.field}=C): {error['code']} {error['message'][:160]}, expected {sorted(case.expected)}"
            )
    assert not leaks, "\n".join(leaks)
    assert table_fingerprint() == before, "a call aimed at workspace C changed the tables"


def test_resources_read_of_another_workspaces_artifact_is_refused(worlds, connection):
    uri = f"stacks://artifact/{worlds.c.artifact}"
    reply = connection.request("resources/read", {"uri": uri})
    assert "result" not in reply, f"C's artifact was read over a connection bound to A: {json.dumps(reply)[:300]}"
    assert reply["error"]["code"] == -32602 and reply["error"]["data"]["uri"] == uri, reply
    assert reply["error"]["data"]["error"]["code"] == "NOT_FOUND", reply
    mine = connection.request("resources/read", {"uri": f"stacks://artifact/{worlds.a.artifact}"})
    assert (
        json.loads(mine["result"]["contents"][0]["text"])["artifact"]["id"] == worlds.a.artifact
    )  # A's own still reads


# -- the token over the connection's lifetime: resources/read too ---------------------------------------
def test_resources_read_after_revocation_is_refused_in_process(stack, worlds):
    from domain import auth

    secret, row = auth.mint_pat(worlds.user.user_id)
    uri = f"stacks://artifact/{worlds.a.artifact}"
    with Adapter(["--workspace", worlds.a.workspace], adapter_env(stack, secret, JENTRIX_TOKEN_CACHE_SECONDS="0")) as a:
        a.initialize()
        assert "result" in a.request("resources/read", {"uri": uri})
        assert auth.revoke_token(worlds.user.user_id, row.tokenId)
        reply = a.request("resources/read", {"uri": uri})
        assert "result" not in reply, f"a revoked token still read an artifact: {json.dumps(reply)[:300]}"
        assert reply["error"]["code"] == -32602 and reply["error"]["data"]["uri"] == uri, reply
        refusal = reply["error"]["data"]["error"]
        assert refusal["code"] == "FORBIDDEN" and "revoked or has expired" in refusal["message"], refusal
        assert "jentrix token create" in refusal["hint"]
        call = error_of(a.call("get_artifact", {"artifactId": worlds.a.artifact}))
        assert (
            call["code"] == "FORBIDDEN" and call["message"] == refusal["message"]
        )  # the same refusal for both methods
        assert a.close() == 0
    assert "no longer authenticates" in a.stderr and "resources/read" in a.stderr
