"""Line framing of the stdio adapter (stdio contract "Framing"; docs/stdio.md), one rule per test.

The unit tests pin the reader and the classifier; the process tests run the real adapter
(``python -m functions.stdio_adapter``) against the session's DynamoDB Local with a small
``--max-line-bytes`` and check what comes back on stdout, line by line.
"""

from __future__ import annotations

import io
import json
import random
import threading
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from functions.stdio.framing import LineReader, Oversized, classify, encode
from tests.conftest import make_actor
from tests.stdio_support import Adapter, adapter_env, structured_ok

LIMIT = 4096


# -- the reader ------------------------------------------------------------------------------------
def read_all(data: bytes, limit: int, chunk: int) -> list[bytes | Oversized]:
    stream = io.BytesIO(data)
    return [bytes(x) if isinstance(x, bytearray) else x for x in LineReader(stream.read, limit, chunk)]


def test_reader_splits_lines_and_keeps_a_last_line_without_newline():
    assert read_all(b'{"a":1}\n{"b":2}\r\n\nlast', 100, 4) == [b'{"a":1}', b'{"b":2}\r', b"", b"last"]


def test_reader_accepts_a_line_of_exactly_the_limit_and_drains_one_byte_more():
    data = b"x" * 10 + b"\n" + b"y" * 11 + b"\n" + b"ok\n"
    assert read_all(data, 10, 3) == [b"x" * 10, Oversized(11), b"ok"]


def test_reader_reports_an_oversized_last_line_without_newline():
    assert read_all(b"ok\n" + b"z" * 50, 10, 7) == [b"ok", Oversized(50)]


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=12),
    limit=st.integers(1, 30),
    chunk=st.integers(1, 17),
)
def test_reader_property_any_chunking_gives_each_line_or_its_oversize(lines, limit, chunk):
    data = b"".join(line + b"\n" for line in lines)
    expected = [line if len(line) <= limit else Oversized(len(line)) for line in lines]
    assert read_all(data, limit, chunk) == expected


# -- the classifier -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("line", "kind", "code", "id_"),
    [
        (b"\xff\xfe{}", "invalid", -32700, None),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping"', "invalid", -32700, None),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}', "invalid", -32700, None),
        (b"[" * 2000 + b"]" * 2000, "invalid", -32700, None),  # deeper than the decoder allows
        (b"[]", "invalid", -32600, None),
        (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', "invalid", -32600, None),
        (b"42", "invalid", -32600, None),
        (b'"ping"', "invalid", -32600, None),
        (b'{"jsonrpc":"1.0","id":7,"method":"ping"}', "invalid", -32600, 7),
        (b'{"id":"a","method":"ping"}', "invalid", -32600, "a"),
        (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', "invalid", -32600, None),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', "invalid", -32600, None),
        (b'{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}', "invalid", -32600, None),
        (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', "invalid", -32600, None),
        (b'{"jsonrpc":"2.0","id":3,"method":7}', "invalid", -32600, 3),
        (b'{"jsonrpc":"2.0","id":3}', "invalid", -32600, 3),
        (b'{"jsonrpc":"2.0","id":[1],"result":{}}', "invalid", -32600, None),
        (b'{"jsonrpc":"2.0","id":9,"result":{"roots":[]}}', "response", None, None),
        (b'{"jsonrpc":"2.0","id":"s-1","error":{"code":-1,"message":"no"}}', "response", None, None),
        (b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}', "response", None, None),
        (b'{"jsonrpc":"2.0","method":"notifications/initialized"}', "notification", None, None),
        (b'{"jsonrpc":"2.0","id":0,"method":"ping"}', "request", None, None),
        (b"  \t\r", "blank", None, None),
    ],
)
def test_classify(line, kind, code, id_):
    frame = classify(line)
    assert frame.kind == kind
    if code is not None:
        assert frame.reply is not None and frame.reply["error"]["code"] == code and frame.reply["id"] == id_


def test_encode_is_one_line_and_survives_lone_surrogates():
    assert b"\n" not in encode({"text": "a\nb\u2028c"})
    assert json.loads(encode({"id": "\ud800"})) == {"id": "\ud800"}


# -- the running adapter ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def actor(stack):
    return make_actor("Fran", "Framing Space")


@pytest.fixture
def adapter(stack, actor):
    env = adapter_env(stack, actor.token)
    with Adapter(["--max-line-bytes", str(LIMIT), "--workspace", actor.workspace_id], env) as a:
        a.initialize()
        yield a
        assert not a.stdout_problems, a.stdout_problems


def ping(a: Adapter, id_: Any) -> None:
    assert a.request("ping", id_=id_)["result"] == {}


def test_parse_errors_answer_minus_32700_with_null_id_then_the_next_line_is_served(adapter):
    for bad in (b"\xc3\x28 not utf-8", b"{not json", b'{"jsonrpc":"2.0","id":1,"method":"ping"', b'{"a": Infinity}'):
        adapter.send(bad)
        reply = adapter.recv()
        assert reply["id"] is None and reply["error"]["code"] == -32700, reply
    ping(adapter, "after-parse-errors")


def test_invalid_envelopes_answer_minus_32600(adapter):
    cases = [
        (b'{"jsonrpc":"1.0","id":1,"method":"ping"}', 1),
        (b'{"jsonrpc":"2.0","id":false,"method":"ping"}', None),
        (b'{"jsonrpc":"2.0","id":2,"method":["ping"]}', 2),
        (b'[{"jsonrpc":"2.0","id":3,"method":"ping"}]', None),
        (b"[]", None),
        (b"17", None),
    ]
    for line, id_ in cases:
        adapter.send(line)
        reply = adapter.recv()
        assert reply["error"]["code"] == -32600 and reply["id"] == id_, (line, reply)
    ping(adapter, "after-envelopes")


def test_a_line_over_the_limit_is_one_minus_32700_and_the_next_line_is_served(adapter):
    big = json.dumps({"jsonrpc": "2.0", "id": "big", "method": "ping", "params": {"pad": "x" * LIMIT}}).encode()
    adapter.send(big)
    reply = adapter.recv()
    assert reply["id"] is None and reply["error"]["code"] == -32700
    assert reply["error"]["data"] == {"maxLineBytes": LIMIT, "lineBytes": len(big)}
    ping(adapter, "after-big")


def test_a_line_of_exactly_the_limit_is_served(adapter):
    head = b'{"jsonrpc":"2.0","id":"edge","method":"ping"}'
    adapter.send(head + b" " * (LIMIT - len(head)))
    assert adapter.recv() == {"jsonrpc": "2.0", "id": "edge", "result": {}}


def test_a_client_response_is_not_an_invalid_envelope_and_gets_no_reply(adapter):
    adapter.send({"jsonrpc": "2.0", "id": "not-ours", "result": {"roots": []}})
    adapter.send({"jsonrpc": "2.0", "id": 77, "error": {"code": -32601, "message": "nope"}})
    adapter.send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "client could not parse"}})
    ping(adapter, "after-responses")
    adapter.expect_silence()


def test_notifications_get_no_reply(adapter):
    adapter.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "x"}})
    adapter.send({"jsonrpc": "2.0", "method": "notifications/whatever", "params": [1, 2]})
    adapter.send({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "create_board"}})
    ping(adapter, "after-notifications")
    adapter.expect_silence()


def test_blank_lines_are_skipped(adapter):
    adapter.write(b"\n   \n\r\n")
    ping(adapter, "after-blank")
    adapter.expect_silence(0.2)


def test_concurrent_calls_are_written_whole_one_per_line(adapter, actor):
    board = structured_ok(adapter.call("create_board", {"workspaceId": "", "name": "Concurrency"}))
    n = 40
    for i in range(n):
        adapter.send(
            {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": "get_board_snapshot", "arguments": {"boardId": board["board"]["id"]}},
            }
        )
        adapter.send({"jsonrpc": "2.0", "id": f"p{i}", "method": "ping"})
    seen = {}
    for _ in range(2 * n):
        msg = adapter.recv()
        seen[msg["id"]] = msg
    assert set(seen) == set(range(n)) | {f"p{i}" for i in range(n)}
    for i in range(n):
        assert seen[i]["result"]["structuredContent"]["board"]["id"] == board["board"]["id"]
    assert not adapter.stdout_problems  # every stdout line was one whole JSON-RPC message


def test_eof_exits_zero_after_the_calls_in_flight(stack, actor):
    env = adapter_env(stack, actor.token)
    with Adapter(["--workspace", actor.workspace_id], env) as a:
        a.initialize()
        for i in range(10):
            a.send(
                {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "tools/call",
                    "params": {"name": "list_workspaces", "arguments": {}},
                }
            )
        rc = a.close()
        got = []
        while not a.messages.empty():
            got.append(a.messages.get())
        assert rc == 0, a.stderr
        assert sorted(m["id"] for m in got) == list(range(10))
        assert all(not m["result"]["isError"] for m in got)
        assert not a.stdout_problems


# -- the fuzz -------------------------------------------------------------------------------------
def fuzz_lines(rng: random.Random, count: int) -> tuple[list[bytes], list[tuple[Any, int]], set[Any]]:
    """Random lines, each built so its answer is known: (lines, expected errors in order, ping ids)."""
    lines: list[bytes] = []
    errors: list[tuple[Any, int]] = []
    pings: set[Any] = set()

    def req(id_: Any) -> bytes:
        return json.dumps(
            {"jsonrpc": "2.0", "id": id_, "method": "ping", "params": {"t": "é" * rng.randint(0, 30)}},
            ensure_ascii=False,
        ).encode()

    alphabet = [b for b in range(256) if b != 10]  # anything but the newline

    def rand_bytes(n: int) -> bytes:
        return bytes(rng.choices(alphabet, k=n))

    for i in range(count):
        kind = rng.choices(
            [
                "binary",
                "truncated",
                "oversized",
                "scalar",
                "array",
                "bad_version",
                "bad_id",
                "bad_method",
                "ping",
                "notification",
                "response",
                "blank",
                "text",
            ],
            weights=[10, 12, 6, 5, 5, 6, 6, 5, 20, 6, 5, 3, 11],
        )[0]
        if kind == "binary":
            raw = bytearray(rand_bytes(rng.randint(1, 200)))
            raw.insert(rng.randrange(len(raw) + 1), 0xFF)  # never valid UTF-8
            lines.append(bytes(raw))
            errors.append((None, -32700))
        elif kind == "truncated":
            full = req(f"t{i}")
            lines.append(full[: rng.randint(1, len(full) - 1)])
            errors.append((None, -32700))
        elif kind == "oversized":
            lines.append(rand_bytes(rng.randint(LIMIT + 1, 3 * LIMIT)))
            errors.append((None, -32700))
        elif kind == "scalar":
            lines.append(json.dumps(rng.choice([0, -3.5, "str", True, False, None, 10**20])).encode())
            errors.append((None, -32600))
        elif kind == "array":
            lines.append(json.dumps([json.loads(req(f"a{i}"))] * rng.randint(0, 3)).encode())
            errors.append((None, -32600))
        elif kind == "bad_version":
            id_ = rng.choice([i, f"v{i}"])
            env = rng.choice([{"jsonrpc": "1.0"}, {"jsonrpc": 2.0}, {}, {"jsonrpc": None}])
            lines.append(json.dumps({**env, "id": id_, "method": "ping"}).encode())
            errors.append((id_, -32600))
        elif kind == "bad_id":
            lines.append(
                json.dumps(
                    {"jsonrpc": "2.0", "id": rng.choice([True, 1.25, {"k": 1}, [1], None]), "method": "ping"}
                ).encode()
            )
            errors.append((None, -32600))
        elif kind == "bad_method":
            id_ = f"m{i}"
            lines.append(
                json.dumps({"jsonrpc": "2.0", "id": id_, "method": rng.choice([1, None, ["ping"], {"m": 1}])}).encode()
            )
            errors.append((id_, -32600))
        elif kind == "ping":
            id_ = rng.choice([i, f"p{i}"])
            lines.append(req(id_))
            pings.add(id_)
        elif kind == "notification":
            lines.append(
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "method": rng.choice(["notifications/cancelled", "notifications/progress", "x/y"]),
                    }
                ).encode()
            )
        elif kind == "response":
            lines.append(json.dumps({"jsonrpc": "2.0", "id": f"u{i}", "result": {"n": i}}).encode())
        elif kind == "blank":
            lines.append(rng.choice([b"", b" ", b"\t \r"]))
        else:  # text that starts like no JSON value
            lines.append(("x" + "".join(rng.choice('abc{}[]:," 0123') for _ in range(rng.randint(0, 80)))).encode())
            errors.append((None, -32700))
    return lines, errors, pings


def test_frame_fuzz_leaves_the_process_alive_answers_each_line_and_serves_afterwards(stack, actor, record_property):
    rng = random.Random(20261130)
    count = 5000
    lines, expected_errors, pings = fuzz_lines(rng, count)
    env = adapter_env(stack, actor.token)
    with Adapter(["--max-line-bytes", str(LIMIT), "--workspace", actor.workspace_id], env) as a:
        a.initialize()
        started = time.monotonic()
        writer = threading.Thread(target=lambda: a.write(b"".join(line + b"\n" for line in lines)))
        writer.start()
        errors: list[tuple[Any, int]] = []
        results: set[Any] = set()
        for _ in range(len(expected_errors) + len(pings)):
            msg = a.recv(timeout=60)
            if "error" in msg:
                errors.append((msg["id"], msg["error"]["code"]))
            else:
                assert msg["result"] == {}, msg
                results.add(msg["id"])
        writer.join()
        elapsed = time.monotonic() - started
        assert errors == expected_errors  # framing errors are answered in line order
        assert results == pings
        assert a.proc.poll() is None
        board = structured_ok(a.call("create_board", {"workspaceId": "", "name": "After the fuzz"}))
        assert board["board"]["workspaceId"] == actor.workspace_id
        a.expect_silence(0.3)
        assert not a.stdout_problems
        assert a.close() == 0
    record_property("fuzz_lines", count)
    record_property("fuzz_seconds", round(elapsed, 2))
    print(f"fuzz: {count} lines ({len(expected_errors)} errors, {len(pings)} pings) answered in {elapsed:.2f}s")


# -- the drain -------------------------------------------------------------------------------------
def stream_huge_line(a: Adapter, size: int) -> int:
    """Write one JSON-looking line of ``size`` bytes in 1 MiB pieces (never held whole here)."""
    head = b'{"jsonrpc":"2.0","id":"huge","method":"ping","params":{"pad":"'
    tail = b'"}}\n'
    piece = b"x" * (1 << 20)
    a.write(head)
    left = size - len(head) - len(tail) + 1
    while left > 0:
        n = min(left, len(piece))
        a.write(piece[:n])
        left -= n
    a.write(tail)
    return size


@pytest.mark.slow
def test_a_200_mib_line_is_drained_with_bounded_memory_and_the_next_line_is_served(stack, actor, record_property):
    env = adapter_env(stack, actor.token)
    size = 200 * 1024 * 1024
    with Adapter(["--workspace", actor.workspace_id], env) as a:  # the default 16 MiB limit
        a.initialize()
        ping(a, "before")
        baseline = a.vm_hwm_kib()
        started = time.monotonic()
        stream_huge_line(a, size)
        reply = a.recv(timeout=120)
        assert reply["id"] is None and reply["error"]["code"] == -32700
        assert reply["error"]["data"] == {"maxLineBytes": 16 * 1024 * 1024, "lineBytes": size}
        ping(a, "after")
        elapsed = time.monotonic() - started
        peak = a.vm_hwm_kib()
        assert a.close() == 0
    record_property("drain_peak_rss_mib", round(peak / 1024, 1))
    record_property("drain_baseline_rss_mib", round(baseline / 1024, 1))
    print(
        f"drain: 200 MiB line in {elapsed:.2f}s; peak RSS {peak / 1024:.1f} MiB (before the line {baseline / 1024:.1f} MiB)"
    )
    assert peak < 120 * 1024, f"peak RSS {peak / 1024:.1f} MiB"
