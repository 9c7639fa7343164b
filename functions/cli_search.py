"""``jentrix search verify``: compare the search index with the entities, and repair the drift.

An operator command on the table itself (like ``jentrix token``): it reads every task and
comment of the workspace(s), the doc states and postings (domain/search/verify.py), prints one
summary line per workspace and one line per drifted doc, and with ``--repair`` applies the
pending records and rewrites the drifted docs. Exit status: 0 when no drift is left, 1 when
some is.
"""

from __future__ import annotations

import argparse
import json
from typing import Any


def cmd_search_verify(args: argparse.Namespace) -> int:
    from functions.cli_common import connect

    connect(args)
    from domain.search.verify import verify
    from domain.store import workspaces as workspace_store

    workspaces = args.workspace or workspace_store.all_ids()
    drift = 0
    reports = []
    for ws in workspaces:
        report = verify(ws, repair=args.repair)
        drift += report.drifted
        reports.append(report)
        if not args.json:
            print("\n".join(report.lines()))
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "workspaceId": r.workspace_id,
                        "docs": r.docs,
                        "verdicts": dict(r.verdicts),
                        "pending": r.pending,
                        "repaired": r.repaired,
                        "drift": r.drift,
                    }
                    for r in reports
                ]
            )
        )
    return 1 if drift else 0


def add_parsers(sub: Any) -> None:
    from functions.cli_common import add_target_flags

    search = sub.add_parser("search", help="check the search index against the tasks and comments")
    ssub = search.add_subparsers(dest="action", metavar="ACTION", required=True)
    v = ssub.add_parser("verify", help="report index drift (missing, stale or leftover postings); --repair fixes it")
    v.add_argument(
        "--workspace",
        metavar="WS_ID",
        action="append",
        help="only this workspace (repeatable; default: every workspace)",
    )
    v.add_argument(
        "--repair", action="store_true", help="apply pending records and rewrite every drifted doc, then check again"
    )
    v.add_argument("--json", action="store_true", help="print the reports as JSON")
    add_target_flags(v)
    v.set_defaults(func=cmd_search_verify)
