"""Search benchmark: Python's own documentation topics as tasks, at 1,000 and then 10,000 tasks.

    python -m benchmarks.search                  # 1,000 tasks, then grown to 10,000 (budget: ~20 min)
    python -m benchmarks.search --sizes 1000     # the small run only
    python -m benchmarks.search --no-write       # print only; leave docs/performance.md alone
    python -m benchmarks.search --json before.json           # also keep the figures as JSON
    python -m benchmarks.search --before before.json         # add the before/after ratios (section search-plans)

Every paragraph of ``pydoc_data.topics`` (standard library; no download) of 120 characters or
more becomes a task: title = its first line (cut to 200 characters), description = the paragraph
(cut to 2,000). There are about 1,230 such paragraphs, so past them the load repeats them with
``[xcopy N]`` in the title (the copies are real text too; a rare word then matches one task per
copy). Tasks are created through ``bulk_create_tasks`` (the real write path: entities and their
pending search records; the consumer then writes the postings, timed apart):
the first size is loaded and measured, then the same workspace is grown to the next size and
measured again with the same queries, so the growth ratio compares like with like.

Queries (all chosen from the first load's tasks, so they exist at every size):

- *rare pair*: 20 known-answer queries of two rare words of one paragraph (success@5: a task
  with that paragraph is in the top 5; precision@5 against a brute-force answer);
- *rare -xcopy*: a rare word minus the copies' marker (the same single match at every size);
- *phrase*: a quoted two-word phrase of one paragraph;
- *or*: two rare words of two paragraphs joined by ``or``;
- *common word*: a word in about a fifth of the tasks (hits the 1,000-candidate cap at 10k);
- *substring*: the inside of a long rare word (no full-text match; the substring vocabulary);
- *task key*: an exact key;
- *every task* (`retry`, which the load appends to every description) with a page of 20, and the
  *board filter* cases (`retry` and the common word with ``boardId``, page of 20): the load
  spreads the tasks over ``--boards`` boards (50 at a time, round robin), so a board holds a
  tenth of them; their expected matches are counted from the loaded texts (the filter must find
  every one).

For each: matches (``totalCount``), DynamoDB requests, items read, read units and latency (medians over the
class's queries, each singleton run 3 times), and write units per created task of each load.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from collections import Counter
from typing import Any

from benchmarks._support import DynamoDBMeter, Stack, call, machine_line, table, write_section

COPY_MARK = "xcopy"
EVERY_WORD = "retry"  # appended to every description: a word present in every task
PAGE20 = ("every task", "board filter", "board filter, common word")


def paragraphs(limit: int) -> list[tuple[str, str]]:
    from pydoc_data.topics import topics

    out = []
    for _, body in sorted(topics.items()):
        for para in re.split(r"\n\s*\n", body):
            para = para.strip()
            if len(para) < 120:
                continue
            first = para.splitlines()[0].strip()[:200] or "untitled"
            out.append((first, para[:1990] + "\n\n" + EVERY_WORD))
    base = list(out)
    copy = 1
    while len(out) < limit:  # past the real paragraphs: copies, marked in the title
        out += [(f"{t} [{COPY_MARK} {copy}]", d) for t, d in base[: limit - len(out)]]
        copy += 1
    return out[:limit]


def _queries(docs: list[tuple[str, str]], key: str) -> list[tuple[str, str, int | None]]:
    """(class, query text, index of the known task or None) from ``docs`` (the first load)."""
    from domain.search import text as st

    first = docs
    words = [{w for w in st.lexemes(f"{t} {d}") if w} for t, d in first]
    df = Counter(w for ws in words for w in ws)
    raw = [[w for w in st.raw_words(d) if w.isalpha()] for _, d in first]
    out: list[tuple[str, str, int | None]] = []
    step = max(1, len(first) // 20)

    def rare(i: int, n: int) -> list[str]:
        return sorted((w for w in words[i] if w.isalpha() and len(w) > 3), key=lambda w: (df[w], w))[:n]

    for k in range(20):
        pair = rare(k * step, 2)
        if len(pair) == 2:
            out.append(("rare pair", " ".join(pair), k * step))
    out.append(("rare -xcopy", f"{rare(7, 1)[0]} -{COPY_MARK}", 7))
    for i in range(3, len(first)):  # a phrase: two consecutive long words of one paragraph
        pair = [w for w in raw[i] if len(w) > 4][:2]
        if len(pair) == 2 and f"{pair[0]} {pair[1]}" in first[i][1]:
            out.append(("phrase", f'"{pair[0]} {pair[1]}"', i))
            break
    out.append(("or", f"{rare(11, 1)[0]} or {rare(23, 1)[0]}", None))
    common = min((w for w in df if w.isalpha() and len(w) > 3), key=lambda w: (abs(df[w] - len(first) // 5), w))
    out.append(("common word", common, None))
    longest = max((w for i in range(0, len(first), 50) for w in raw[i] if len(w) >= 10), key=lambda w: (len(w), w))
    out.append(("substring", longest[1:-1].lower(), None))
    out.append(("task key", key, None))
    out.append(("every task", EVERY_WORD, None))
    out.append(("board filter", EVERY_WORD, None))
    out.append(("board filter, common word", common, None))
    return out


def _measure(
    meter: DynamoDBMeter, actor: Any, ws: str, queries, ids: list[str], docs, board: str, on_board: set[int]
) -> dict[str, dict[str, float]]:
    from domain.search import text as st

    per: dict[str, list[tuple[int, float, float, int, int]]] = {}
    expected: dict[str, int] = {}
    success, precision = [], []
    words = None
    for cls, qtext, known in queries:
        runs = 1 if cls == "rare pair" else 3
        for _ in range(runs):
            t0 = time.perf_counter()
            args = {"workspaceId": ws, "query": qtext, "limit": 20 if cls in PAGE20 else 5}
            if cls.startswith("board filter"):
                args["boardId"] = board
            with meter.measuring() as reqs:
                out = call("search_tasks", args, actor.principal)
            ms = (time.perf_counter() - t0) * 1000
            reqs = list(reqs)
            per.setdefault(cls, []).append(
                (len(reqs), sum(r.read_units for r in reqs), ms, out["totalCount"], sum(r.items for r in reqs))
            )
        if cls.startswith("board filter") or cls == "every task":
            lex = st.lexeme(qtext)
            needle = st.fold(qtext)  # the words, or the query as a substring (3+ characters)
            expected[cls] = sum(
                1
                for j in range(len(ids))
                if (j in on_board or cls == "every task")
                and (
                    lex in set(st.lexemes(f"{docs[j][0]} {docs[j][1]}"))
                    or needle in st.fold(f"{docs[j][0]}\n{docs[j][1]}")
                )
            )
        if cls == "rare pair":
            if words is None:
                words = [{w for w in st.lexemes(f"{t} {d}") if w} for t, d in docs[: len(ids)]]
            truth = {ids[j] for j, w in enumerate(words) if all(x in w for x in qtext.split())}
            same = {ids[j] for j in range(len(ids)) if docs[j][1] == docs[known][1]}
            top = [r["id"] for r in out["results"]]
            success.append(bool(same & set(top)))
            precision.append(sum(1 for t in top if t in truth) / max(1, min(5, len(truth))))
    summary = {
        cls: {
            "matches": statistics.median(r[3] for r in rows),
            "requests": statistics.median(r[0] for r in rows),
            "read_units": statistics.median(r[1] for r in rows),
            "ms": statistics.median(r[2] for r in rows),
            "items": statistics.median(r[4] for r in rows),
            "expected": expected.get(cls),
        }
        for cls, rows in per.items()
    }
    summary["_quality"] = {
        "success": sum(success),
        "of": len(success),
        "precision": statistics.mean(precision) if precision else 0.0,
    }
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000", help="comma-separated task counts, ascending (default 1000,10000)")
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs/performance.md alone")
    ap.add_argument(
        "--boards", type=int, default=10, help="boards the load is spread over (50 tasks at a time, round robin)"
    )
    ap.add_argument("--json", help="also write the figures to this JSON file")
    ap.add_argument(
        "--before",
        help="figures of an earlier run (--json) to compare with: section search-plans of docs/performance.md",
    )
    ap.add_argument("--label", default="", help="what this run measures (kept in the JSON, e.g. the commit)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    docs = paragraphs(max(sizes))
    results: dict[int, dict[str, Any]] = {}
    began_all = time.perf_counter()
    with Stack() as stack:
        from domain.search import repair

        actor = stack.actor()
        ws = actor.workspace_id
        boards = [
            call("create_board", {"workspaceId": ws, "name": f"Docs {b}"}, actor.principal) for b in range(args.boards)
        ]
        cols = [b["columns"][0]["id"] for b in boards]
        meter = DynamoDBMeter(capacity=True).install()
        ids: list[str] = []
        keys_: list[str] = []
        queries = None
        for size in sizes:
            began = time.perf_counter()
            write_units = 0.0
            start = len(ids)
            per_call: list[tuple[int, float]] = []
            for i in range(start, size, 50):
                t0 = time.perf_counter()
                with meter.measuring() as reqs:
                    out = call(
                        "bulk_create_tasks",
                        {
                            "columnId": cols[(i // 50) % len(cols)],
                            "tasks": [{"title": t, "description": d} for t, d in docs[i : min(i + 50, size)]],
                        },
                        actor.principal,
                    )
                per_call.append((len(reqs), (time.perf_counter() - t0) * 1000))
                write_units += sum(r.write_units for r in reqs)
                ids += [t["id"] for t in out["tasks"]]
                keys_ += [t["key"] for t in out["tasks"]]
            load_s = time.perf_counter() - began
            # the consumer's work (the stream on AWS, the local loop in `jentrix dev`), outside the calls
            t0 = time.perf_counter()
            with meter.measuring() as reqs:
                while repair.drain(ws):
                    pass
            consumer_s = time.perf_counter() - t0
            write_units += sum(r.write_units for r in reqs)
            if queries is None:
                queries = _queries(docs[:size], keys_[min(499, len(keys_) - 1)])
            on_board = {j for j in range(len(ids)) if (j // 50) % len(cols) == 0}
            summary = _measure(meter, actor, ws, queries, ids, docs, boards[0]["board"]["id"], on_board)
            summary["_load"] = {
                "seconds": load_s,
                "tasks": size - start,
                "wu_per_task": write_units / max(1, size - start),
                "call_requests": max(r for r, _ in per_call),
                "call_ms": statistics.median(ms for _, ms in per_call),
                "consumer_s": consumer_s,
            }
            results[size] = summary
            q = summary["_quality"]
            print(
                f"{size} tasks: loaded {size - start} in {load_s:.0f} s, {summary['_load']['wu_per_task']:.0f} WU/task; "
                f"success@5 {q['success']}/{q['of']}, precision@5 {q['precision']:.2f}",
                flush=True,
            )
        meter.uninstall()
    total_s = time.perf_counter() - began_all
    classes = list(dict.fromkeys(c for c, _, _ in queries))
    header = ["query", *(f"{s:,}: matches / requests / items / RU / ms" for s in sizes)]
    if len(sizes) > 1:
        header.append(f"growth {sizes[0]:,} → {sizes[-1]:,}: matches / RU / requests / ms")
    rows = []
    for cls in classes:
        example = next(t for c, t, _ in queries if c == cls)
        row = [_label(cls, example)]
        for s in sizes:
            m = results[s][cls]
            row.append(f"{_matches(m)} / {m['requests']:g} / {m['items']:g} / {m['read_units']:.1f} / {m['ms']:.0f}")
        if len(sizes) > 1:
            a, b = results[sizes[0]][cls], results[sizes[-1]][cls]

            def ratio(x: float, y: float) -> str:
                return f"{y / x:.1f}x" if x else "-"

            row.append(
                " / ".join(
                    (
                        ratio(a["matches"], b["matches"]),
                        ratio(a["read_units"], b["read_units"]),
                        ratio(a["requests"], b["requests"]),
                        ratio(a["ms"], b["ms"]),
                    )
                )
            )
        rows.append(row)
    loads = table(
        (
            "tasks",
            "loaded",
            "load time (bulk calls)",
            "bulk_create_tasks of 50: requests (max) / ms (median)",
            "consumer time (postings)",
            "write units / task",
            "success@5",
            "precision@5",
        ),
        [
            (
                f"{s:,}",
                f"{results[s]['_load']['tasks']:,}",
                f"{results[s]['_load']['seconds']:.0f} s",
                f"{results[s]['_load']['call_requests']} / {results[s]['_load']['call_ms']:.0f}",
                f"{results[s]['_load']['consumer_s']:.0f} s",
                f"{results[s]['_load']['wu_per_task']:.0f}",
                f"{results[s]['_quality']['success']}/{results[s]['_quality']['of']}",
                f"{results[s]['_quality']['precision']:.2f}",
            )
            for s in sizes
        ],
    )
    body = "\n\n".join(
        [
            f"`python -m benchmarks.search` ({total_s / 60:.0f} min for this run). {machine_line()}",
            loads,
            table(header, rows),
            "Matches are `totalCount` (exact below the 1,000-candidate cap, a lower bound at it; `x of y`: "
            "y tasks hold the word); requests, items and read units are DynamoDB's own figures per "
            "`search_tasks` call (page size 5; 20 for the every-task and board-filter rows); ms is "
            "in-process latency against DynamoDB Local.",
        ]
    )
    print(body)
    if args.json:
        import json

        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(
                {
                    "label": args.label,
                    "sizes": sizes,
                    "queries": [[c, t] for c, t, _ in queries],
                    "results": {str(k): v for k, v in results.items()},
                },
                fh,
                indent=1,
            )
    if not args.no_write:
        write_section("search", body)
    if args.before:
        compared = compare(args.before, sizes, results, queries, args.label)
        print(compared)
        if not args.no_write:
            write_section("search-plans", compared)


def _label(cls: str, example: str) -> str:
    return f"{cls} (`{example}`)" if cls != "rare pair" else "rare pair (20 queries, medians)"


def _matches(m: dict[str, Any]) -> str:
    return f"{m['matches']:g} of {m['expected']}" if m.get("expected") is not None else f"{m['matches']:g}"


def compare(before_path: str, sizes: list[int], results: dict[int, dict[str, Any]], queries, label: str) -> str:
    """The before/after table: per size and query class, the earlier run's figures, this run's,
    and after/before ratios of items, read units, requests and ms."""
    import json

    with open(before_path, encoding="utf-8") as fh:
        before = json.load(fh)
    rows = []
    for s in sizes:
        old = before["results"].get(str(s))
        if old is None:
            continue
        for cls in dict.fromkeys(c for c, _, _ in queries):
            a, b = old.get(cls), results[s].get(cls)
            if not a or not b:
                continue

            def ratio(key: str, a: dict[str, Any] = a, b: dict[str, Any] = b) -> str:
                return f"{b[key] / a[key]:.2f}x" if a.get(key) else "-"

            example = next(t for c, t, _ in queries if c == cls)
            rows.append(
                (
                    f"{s:,}",
                    _label(cls, example),
                    f"{_matches(a)} / {a['requests']:g} / {a.get('items', 0):g} / {a['read_units']:.1f} / {a['ms']:.0f}",
                    f"{_matches(b)} / {b['requests']:g} / {b['items']:g} / {b['read_units']:.1f} / {b['ms']:.0f}",
                    f"{ratio('items')} / {ratio('read_units')} / {ratio('requests')} / {ratio('ms')}",
                )
            )
        la, lb = old.get("_load"), results[s].get("_load")
        if la and lb:
            rows.append(
                (
                    f"{s:,}",
                    "bulk_create_tasks of 50 (requests max / ms median)",
                    f"{la['call_requests']} / {la['call_ms']:.0f}",
                    f"{lb['call_requests']} / {lb['call_ms']:.0f}",
                    f"ms {lb['call_ms'] / la['call_ms']:.2f}x" if la["call_ms"] else "-",
                )
            )
        qa, qb = old.get("_quality"), results[s].get("_quality")
        if qa and qb:
            rows.append(
                (
                    f"{s:,}",
                    "success@5 (20 rare pairs)",
                    f"{qa['success']}/{qa['of']}",
                    f"{qb['success']}/{qb['of']}",
                    "",
                )
            )
    return "\n\n".join(
        [
            f"Before: {before.get('label') or before_path}. After: {label or 'this run'}. {machine_line()}",
            table(
                (
                    "tasks",
                    "query",
                    "before: matches / requests / items / RU / ms",
                    "after: matches / requests / items / RU / ms",
                    "after/before: items / RU / requests / ms",
                ),
                rows,
            ),
        ]
    )


if __name__ == "__main__":
    main()
