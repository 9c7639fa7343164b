"""Search benchmark: Python's own documentation topics as tasks, 20 known-answer queries.

    python -m benchmarks.search                 # 1,000 tasks
    python -m benchmarks.search --tasks 10000   # the large run (budget: ~10x the default's time)

Every paragraph of ``pydoc_data.topics`` (standard library; no download) long enough becomes a
task: title = its first line (cut to 200 characters), description = the paragraph (cut to 2,000).
Tasks are created through ``bulk_create_tasks`` (the real write path, postings included). Then
20 queries, each built from two rarely shared words of one known paragraph, run through
``search_tasks``: success@5 (the known task is in the top 5), precision@5 against a brute-force
answer (tasks whose folded, stemmed words hold every query word), latency, DynamoDB requests and
read units per query, and write units per created task.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from collections import Counter

from benchmarks._support import DynamoDBMeter, Stack, call


def paragraphs(limit: int) -> list[tuple[str, str]]:
    from pydoc_data.topics import topics

    out = []
    for _, body in sorted(topics.items()):
        for para in re.split(r"\n\s*\n", body):
            para = para.strip()
            if len(para) < 120:
                continue
            first = para.splitlines()[0].strip()[:200] or "untitled"
            out.append((first, para[:2000]))
    while len(out) < limit:  # the 10k run reuses paragraphs with a numbered title
        out += [(f"{t} ({len(out) + i})", d) for i, (t, d) in enumerate(out[: limit - len(out)])]
    return out[:limit]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=1000)
    args = ap.parse_args()
    from domain.search import text as st

    docs = paragraphs(args.tasks)
    with Stack() as stack:
        actor = stack.actor()
        board = call("create_board", {"workspaceId": actor.workspace_id, "name": "Docs"}, actor.principal)
        col = board["columns"][0]["id"]
        meter = DynamoDBMeter(capacity=True).install()
        began = time.perf_counter()
        ids: list[str] = []
        write_units = 0.0
        for i in range(0, len(docs), 50):
            with meter.measuring() as reqs:
                out = call("bulk_create_tasks", {"columnId": col, "tasks": [{"title": t, "description": d} for t, d in docs[i : i + 50]]}, actor.principal)
            write_units += sum(r.write_units for r in reqs)
            ids += [t["id"] for t in out["tasks"]]
        load_s = time.perf_counter() - began
        # 20 known-answer queries: two words of the paragraph that few other paragraphs hold
        words = [set(w for w in st.lexemes(f"{t} {d}") if w) for t, d in docs]
        df = Counter(w for ws in words for w in ws)
        queries = []
        step = max(1, len(docs) // 20)
        for k in range(20):
            i = k * step
            rare = sorted((w for w in words[i] if w.isalpha() and len(w) > 3), key=lambda w: (df[w], w))[:2]
            if len(rare) == 2:
                queries.append((i, " ".join(rare)))
        success, precision, lat, reqs_n, rus = [], [], [], [], []
        for i, qtext in queries:
            truth = {ids[j] for j, ws in enumerate(words) if all(w in ws for w in qtext.split())}
            t0 = time.perf_counter()
            with meter.measuring() as reqs:
                out = call("search_tasks", {"workspaceId": actor.workspace_id, "query": qtext, "limit": 5}, actor.principal)
            lat.append((time.perf_counter() - t0) * 1000)
            top = [r["id"] for r in out["results"]]
            success.append(ids[i] in top)
            precision.append(sum(1 for t in top if t in truth) / max(1, min(5, len(truth))))
            reqs_n.append(len(reqs))
            rus.append(sum(r.read_units for r in reqs))
        meter.uninstall()
    print(f"tasks {len(ids)}; load {load_s:.0f} s; write units per task {write_units / len(ids):.0f}")
    print(f"queries {len(queries)}: success@5 {sum(success)}/{len(success)}, precision@5 {statistics.mean(precision):.2f}")
    print(f"latency ms median {statistics.median(lat):.0f} max {max(lat):.0f}; requests/query median {statistics.median(reqs_n):.0f} "
          f"max {max(reqs_n)}; read units/query median {statistics.median(rus):.1f} max {max(rus):.1f}")


if __name__ == "__main__":
    main()
