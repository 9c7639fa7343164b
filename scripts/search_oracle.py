"""Regenerates tests/golden/websearch_tsquery.json from PostgreSQL itself (the oracle).

    python scripts/search_oracle.py            # needs Debian's postgresql (apt-get install -y postgresql)

Starts a throw-away cluster in a temporary directory on a loopback port as a non-root user
(initdb refuses root: when run as root the cluster belongs to ``postgres`` or ``nobody``), runs
every query of :data:`QUERIES` through ``websearch_to_tsquery('simple', …)``, parses the printed
tsquery into the normal form of :func:`domain.search.query.normal` and writes both. The test
``tests/test_search_query.py`` compares our parser with that file, so the suite needs no Postgres.
"""

from __future__ import annotations

import glob
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "websearch_tsquery.json"

QUERIES = [
    "fat rat",
    "a b or c d",
    "a or b c",
    "cat OR",
    "OR rat",
    "or OR or",
    "or",
    "OR",
    "oR a",
    'fat "or" rat',
    '"fat cat"or"fat rat"',
    "fat or(rat",
    "fat or(",
    "fat (cat OR rat",
    "fat -rat",
    "fat - rat",
    "-rat",
    "fat --rat",
    'fat -"sad cat"',
    "-a or b",
    "a -b or c",
    "rat -",
    "- -",
    '""',
    "",
    "   ",
    '"unclosed phrase',
    'fat "unclosed',
    "a | b",
    "a & !b",
    "a:*",
    "a <-> b",
    "x AND y",
    "x and y",
    "a or or b",
    "a or -b",
    "a -or b",
    "a or- b",
    "a or_b",
    "orange or apple",
    "a OR b OR c d",
    "-a -b",
    "a --b or --c",
    '"a b" "c d"',
    '"a b"c',
    'a"b c"',
    '"a -b or c"',
    '"a',
    '"',
    '" "',
    'a "" b',
    "a - - b",
    "a -- ",
    "test-case",
    "fat-rat cat",
    '"test-case foo"',
    "-test-case",
    "rat's tail",
    "don't stop",
    "foo_bar baz",
    "C++ or C#",
    "ABC-42",
    "abc-42 or xyz",
    "100% legit",
    "$5 or 5$",
    "a@b.com",
    "https://example.com/x?y=1",
    "Café naïve",
    "ÉCOLE Straße",
    "日本語 テキスト",
    "🚀 launch 🚀",
    "launch🚀now",
    "'quoted' words",
    "SELECT * FROM tasks; DROP TABLE x; --",
    "1' or '1'='1",
    "null undefined NaN",
    "<script>alert(1)</script>",
    "!!!",
    "((()))",
    "a\\ b",
    "foo\\",
    "a\tb\nc",
    "-(a b)",
    "a or (b -c)",
    "x y or",
    "or x y",
    "x -y -z or w",
    '"a" or "b" -"c"',
    "beta-1 release",
    "v1.2.3 build",
    "end.",
    "...dots...",
    "a:b",
    "a :b",
    "x:y:z",
    "a:*b c",
    ":x",
    "a:",
    "foo: bar",
    "a:B|c",
]

# a second Postgres check on the normal-form parser below: these outputs parse as expected
_SELF_CHECK = {
    "'a' & !( 'b' <-> 'c' ) | 'd'": [
        "or",
        [["and", [["term", "a"], ["not", ["phrase", [["b", 0], ["c", 1]]]]]], ["term", "d"]],
    ]
}


# -- a parser for Postgres' printed tsquery -------------------------------------------------------
def _lex(s: str):
    i, out = 0, []
    while i < len(s):
        ch = s[i]
        if ch.isspace():
            i += 1
        elif ch == "'":
            j, buf = i + 1, []
            while True:
                if s[j] == "\\":
                    buf.append(s[j + 1])
                    j += 2
                elif s[j] == "'" and j + 1 < len(s) and s[j + 1] == "'":
                    buf.append("'")
                    j += 2
                elif s[j] == "'":
                    break
                else:
                    buf.append(s[j])
                    j += 1
            out.append(("lex", "".join(buf)))
            i = j + 1
        elif ch == "<":
            j = s.index(">", i)
            dist = s[i + 1 : j]
            out.append(("phr", 1 if dist == "-" else int(dist)))
            i = j + 1
        elif ch in "&|!()":
            out.append((ch, None))
            i += 1
        else:
            raise ValueError(f"unexpected {ch!r} in {s!r}")
    return out


def parse_tsquery(s: str):
    toks = _lex(s)
    if not toks:
        return None
    pos = 0

    def peek():
        return toks[pos][0] if pos < len(toks) else None

    def prim():
        nonlocal pos
        kind, val = toks[pos]
        pos += 1
        if kind == "!":
            return ["not", prim()]
        if kind == "(":
            node = orr()
            pos += 1  # ")"
            return node
        return ["term", val]

    def phrase():
        nonlocal pos
        node = prim()
        while peek() == "phr":
            dist = toks[pos][1]
            pos += 1
            right = prim()
            left = node[1] if node[0] == "phrase" else [[node[1], 0]]
            rights = right[1] if right[0] == "phrase" else [[right[1], 0]]
            base = left[-1][1] + dist
            node = ["phrase", left + [[w, base + o] for w, o in rights]]
        return node

    def binary(op, sym, sub):
        def run():
            nonlocal pos
            items = [sub()]
            while peek() == sym:
                pos += 1
                items.append(sub())
            flat = []
            for item in items:
                flat.extend(item[1] if item[0] == op else [item])
            return flat[0] if len(flat) == 1 else [op, flat]

        return run

    andd = binary("and", "&", phrase)
    orr = binary("or", "|", andd)
    return orr()


# -- the throw-away cluster ---------------------------------------------------------------------
def _bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}")) or [shutil.which(name)]
    if not found or not found[-1]:
        sys.exit(f"{name} not found: apt-get install -y postgresql")
    return found[-1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_user(cmd: list[str], user: str | None) -> list[str]:
    return cmd if user is None else ["runuser", "-u", user, "--", *cmd]


def run_oracle(queries: list[str]) -> list[str]:
    user = None
    if os.geteuid() == 0:
        user = next(u for u in ("postgres", "nobody") if _has_user(u))
    tmp = tempfile.mkdtemp(prefix="pg-oracle-")
    os.chmod(tmp, 0o777)
    data = os.path.join(tmp, "data")
    port = _free_port()
    env = {**os.environ, "LC_ALL": "C.UTF-8"}
    try:
        subprocess.run(
            _as_user(
                [_bin("initdb"), "-D", data, "-E", "UTF8", "--locale=C.UTF-8", "-A", "trust", "-U", "oracle"], user
            ),
            check=True,
            env=env,
            capture_output=True,
        )
        subprocess.run(
            _as_user(
                [
                    _bin("pg_ctl"),
                    "-D",
                    data,
                    "-l",
                    os.path.join(tmp, "log"),
                    "-w",
                    "-o",
                    f"-h 127.0.0.1 -p {port} -k {tmp}",
                    "start",
                ],
                user,
            ),
            check=True,
            env=env,
            capture_output=True,
        )
        literals = ",".join("'" + q.replace("'", "''") + "'" for q in queries)
        sql = (
            "select json_agg(websearch_to_tsquery('simple', q)::text order by n) "
            f"from unnest(array[{literals}]::text[]) with ordinality as t(q, n)"
        )
        out = subprocess.run(
            [
                "psql",
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
                "-U",
                "oracle",
                "-d",
                "postgres",
                "-At",
                "-v",
                "ON_ERROR_STOP=1",
            ],
            input=sql,
            check=True,
            env=env,
            capture_output=True,
            text=True,
        )
        answers = json.loads(out.stdout)
        return answers
    finally:
        subprocess.run(_as_user([_bin("pg_ctl"), "-D", data, "-m", "fast", "stop"], user), env=env, capture_output=True)
        time.sleep(0.2)
        shutil.rmtree(tmp, ignore_errors=True)


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def main() -> None:
    for text, want in _SELF_CHECK.items():
        assert parse_tsquery(text) == want, parse_tsquery(text)
    answers = run_oracle(QUERIES)
    rows = [{"query": q, "tsquery": a, "normal": parse_tsquery(a)} for q, a in zip(QUERIES, answers, strict=True)]
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(
        json.dumps(
            {"source": "PostgreSQL websearch_to_tsquery('simple', q)", "version": _version(), "cases": rows},
            ensure_ascii=False,
            indent=1,
        )
        + "\n"
    )
    print(f"{len(rows)} queries -> {GOLDEN.relative_to(ROOT)}")


def _version() -> str:
    out = subprocess.run([_bin("postgres"), "--version"], capture_output=True, text=True)
    return out.stdout.strip()


if __name__ == "__main__":
    main()
