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


def _all_workspaces() -> list[str]:
    """Every workspace head's id: a paginated Scan (an operator command; no request path scans)."""
    from domain.store import db, keys
    from domain.store.models import Row

    client, out, start = db.dynamodb_client(), [], None
    while True:
        kwargs: dict[str, Any] = {
            "TableName": Row.Meta.table_name,
            "FilterExpression": "#k = :k AND SK = :m",
            "ExpressionAttributeNames": {"#k": "kind"},
            "ExpressionAttributeValues": {":k": {"S": "Workspace"}, ":m": {"S": keys.WORKSPACE_HEAD_SORT_KEY}},
            "ProjectionExpression": "workspaceId",
        }
        if start:
            kwargs["ExclusiveStartKey"] = start
        page = client.scan(**kwargs)
        out += [i["workspaceId"]["S"] for i in page.get("Items", []) if "workspaceId" in i]
        start = page.get("LastEvaluatedKey")
        if not start:
            return sorted(out)


def cmd_search_verify(args: argparse.Namespace) -> int:
    from functions.cli_common import connect

    connect(args)
    from domain.search.verify import verify

    workspaces = args.workspace or _all_workspaces()
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
