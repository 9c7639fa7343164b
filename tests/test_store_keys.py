"""domain/store/keys.py is the only spelling of the table's keys; docs/data-model.md documents
them. Each key function is checked against the pattern in the doc's item tables, and every
documented item has its function, so the two cannot drift apart."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from domain.store import keys

DOC = Path(__file__).resolve().parent.parent / "docs" / "data-model.md"

# doc row label -> (PK, SK) produced by the key function with sample values, and the GSI1 key if any
SAMPLES: dict[str, tuple[tuple[str, str], tuple[str, str] | None]] = {
    "user": (keys.user_profile("usr_a"), None),
    "membership mirror": (keys.membership_mirror("usr_a", "ws_b"), None),
    "workspace": (keys.workspace_head("ws_b"), None),
    "member": (keys.member("ws_b", "usr_a"), None),
    "board entry": (keys.board_entry("ws_b", "bd_c"), None),
    "task-number pointer": (keys.task_number("ws_b", 42), None),
    "slug claim": (keys.slug_claim("my-team"), None),
    "board head": (keys.board_head("bd_c"), None),
    "column": (keys.column("bd_c", "cl_d"), None),
    "task, compact": (keys.task_compact("bd_c", 42), keys.column_order("cl_d", "a0", 42)),
    "task, full": (keys.task_full("bd_c", 42), None),
    "activity": (
        keys.activity("bd_c", "2026-12-01T10:00:00.000Z", "01j0abc"),
        keys.task_activity("tk_e", "2026-12-01T10:00:00.000Z", "01j0abc"),
    ),
    "token": (keys.token("ab12"), keys.user_token("usr_a", "tok_f")),
    "rate window": (keys.rate_window("tok_f", 1_700_000_040_000), None),
    "creation marker": (keys.creation_marker("cd34"), None),
    "email claim": (keys.email_claim("Ada@Example.com"), None),
    "comment": (keys.comment("tk_e", "01j0abc"), None),
    "comment counter": (keys.comment_count("tk_e"), None),
    "task link, outgoing": (keys.link_out("tk_e", "BLOCKS", "tk_g"), None),
    "task link, incoming": (keys.link_in("tk_g", "BLOCKS", "tk_e"), None),
    "link counter": (keys.link_count("tk_e"), None),
    "link graph version": (keys.link_graph("ws_b"), None),
    "subtask": (keys.subtask("tk_e", "01j0abc"), None),
    "task recent activity": (keys.task_recent_activity("tk_e"), None),
    "label": (keys.label("bd_c", "lb_g"), None),
    "label-name claim": (keys.label_name_claim("bd_c", "Needs Review"), None),
    "bulk chunk marker": (keys.bulk_chunk_marker("cd34", 1), None),
    "workspace, default repository": (keys.workspace_head("ws_b"), keys.repo_default_index("owner/name", "ws_b")),
    "project": (keys.project("ws_b", "pj_h"), None),
    "project slug claim": (keys.project_slug_claim("ws_b", "launch"), None),
    "project link": (
        keys.project_link("pj_h", "REPO", "owner/name"),
        keys.repo_link_index("owner/name", "ws_b", "pj_h"),
    ),
    "work item": (keys.work_item("tk_d", "usr_a"), keys.work_index("ws_b", "usr_a", "2026-08-01", "HIGH", "tk_d")),
    "invitation": (keys.invitation("ws_b", "01j0abc"), None),
    "governance policy": (keys.governance_policy("ws_b"), None),
    "approval request": (keys.approval("ws_b", "0123456789abcdef", "01j0abc"), None),
    "workspace log entry": (keys.workspace_log("ws_b", "2026-12-01T10:00:00.000Z", "01j0abc"), None),
    "search word posting": (keys.search_term_posting("ws_b", "pars", keys.search_doc_task("tk_e")), None),
    "search vocabulary trigram": (keys.search_gram_posting("ws_b", "par", "parser"), None),
    "search vocabulary word": (keys.search_vocabulary_word("ws_b", "parser"), None),
    "search removed comment": (keys.search_removed_doc("ws_b", keys.search_doc_comment("tk_e", "cm_f")), None),
    "search artifact vocabulary word": (keys.search_vocabulary_word("ws_b", "parser", keys.SEARCH_ARTIFACTS), None),
    "search pending record": (keys.search_pending("ws_b", keys.search_doc_comment("tk_e", "cm_f")), None),
    "search doc state": (keys.search_doc_state("ws_b", keys.search_doc_task("tk_e")), None),
    "search artifact word posting": (
        keys.search_term_posting("ws_b", "pars", keys.search_doc_artifact("ar_e"), keys.SEARCH_ARTIFACTS),
        None,
    ),
    "search artifact vocabulary trigram": (
        keys.search_gram_posting("ws_b", "par", "parser", keys.SEARCH_ARTIFACTS),
        None,
    ),
    "search artifact pending marker": (keys.search_pending("ws_b", keys.search_doc_artifact("ar_e")), None),
    "agent session": (keys.session("ws_b", "01j0abc"), None),
    "session alignment interval": (keys.session_alignment("ses_b_01j0abc", 1), None),
    "session binding claim": (keys.session_binding_claim("claude-code", "3f2a-thread"), None),
    "upload grant": (keys.upload_grant("ug_b_01j0abc"), None),
    "artifact": (keys.artifact("ws_b", "01j0abc"), None),
    "artifact body": (keys.artifact_body("ws_b", "01j0abc"), None),
    "artifact link copy": (keys.artifact_link("ws_b", "task", "tk_e", "01j0abc"), None),
    "task attachment": (keys.attachment("tk_e", "01j0abc"), None),
    "task attachment counter": (keys.attachment_count("tk_e"), None),
    "claim head": (keys.claim_head("tk_e"), None),
    "peer request": (keys.peer_request("tk_e", "01j0abc"), None),
    "actor claim copy": (keys.actor_claim("ws_b", "usr_a", "tk_e"), None),
    "review": (keys.review("tk_e", "01j0abc"), None),
    "channel entry": (keys.channel_entry("ws_b", "ideas"), None),
    "channel message": (keys.channel_message("ws_b", "ideas", "01j0abc"), None),
    "promotion": (keys.promotion("ws_b", "ideas", "01j0abc", "task"), None),
    "proposed decision": (keys.decision("ws_b", "01j0abc"), None),
    "inbox entry": (keys.inbox_entry("ws_b", "usr_a", "01j0abc"), None),
    "helper link": (keys.helper_link("tk_e", "tk_f"), None),
    "integration": (keys.integration("tk_e", "01j0abc"), None),
    "consultation": (keys.consultation("ws_b", "01j0abc"), None),
    "operator attention item": (keys.attention("ws_b", "01j0abc"), None),
    "activity, by type": (
        keys.activity("bd_c", "2026-12-01T10:00:00.000Z", "01j0abc"),
        keys.activity_type_index("bd_c", "task.moved", "2026-12-01T10:00:00.000Z", "01j0abc"),
    ),
}


def _doc_rows() -> dict[str, list[str]]:
    """Label -> cells of every row of the doc's item tables (those whose header starts with '| item |')."""
    rows: dict[str, list[str]] = {}
    in_items = False
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("| item |"):
            in_items = True
            continue
        if not line.startswith("|"):
            in_items = False
            continue
        if in_items and not line.startswith("| ---"):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            rows[cells[0]] = cells[1:]
    return rows


def _pattern(cell: str) -> list[re.Pattern[str]]:
    """The backticked key patterns of a cell as regexes: ``<number:010>`` is ten digits, any
    other ``<placeholder>`` one or more characters."""
    out = []
    for literal in re.findall(r"`([^`]+)`", cell):
        parts = re.split(r"(<[^>]+>)", literal)
        regex = "".join(
            r"\d{10}" if p == "<number:010>" else ".+?" if p.startswith("<") else re.escape(p) for p in parts
        )
        out.append(re.compile(regex))
    return out


DOC_ROWS = _doc_rows()


@pytest.mark.parametrize("label", sorted(SAMPLES))
def test_key_function_matches_the_documented_pattern(label):
    assert label in DOC_ROWS, f"docs/data-model.md has no item row {label!r}"
    cells = DOC_ROWS[label]
    (pk, sk), gsi1 = SAMPLES[label]
    pk_pattern, sk_pattern = _pattern(cells[0])[0], _pattern(cells[1])[0]
    assert pk_pattern.fullmatch(pk), (label, pk, pk_pattern.pattern)
    assert sk_pattern.fullmatch(sk), (label, sk, sk_pattern.pattern)
    if gsi1 is not None:
        gsi = _pattern(cells[2])
        assert len(gsi) == 2, (label, cells[2])
        assert gsi[0].fullmatch(gsi1[0]) and gsi[1].fullmatch(gsi1[1]), (label, gsi1, [g.pattern for g in gsi])


def test_every_documented_item_has_a_key_function():
    assert set(DOC_ROWS) == set(SAMPLES), set(DOC_ROWS) ^ set(SAMPLES)


def test_numbers_sort_as_strings():
    assert keys.task_compact("b", 9)[1] < keys.task_compact("b", 10)[1]
    assert keys.task_number_of_sort_key(keys.task_full("b", 1234)[1]) == 1234


def test_snapshot_range_excludes_full_items():
    lo, hi = keys.SNAPSHOT_RANGE
    inside = [
        keys.board_head("b")[1],
        keys.column("b", "cl_x")[1],
        keys.label("b", "lb_x")[1],
        keys.task_compact("b", 1)[1],
    ]
    assert all(lo <= sk <= hi for sk in inside)
    assert not lo <= keys.task_full("b", 1)[1] <= hi
    hlo, hhi = keys.HEADER_RANGE
    assert hlo <= keys.column("b", "cl_x")[1] <= hhi and not hlo <= keys.task_compact("b", 1)[1] <= hhi


def test_email_claims_ignore_case_and_spaces():
    assert keys.email_claim(" Ada@Example.COM ") == keys.email_claim("ada@example.com")


def test_dependency_range_holds_exactly_a_tasks_dependency_successors():
    lo, hi = keys.DEPENDENCY_RANGE
    inside = [keys.link_out("tk_a", "BLOCKS", "tk_b")[1], keys.link_in("tk_a", "DEPENDS_ON", "tk_b")[1]]
    outside = [
        keys.link_in("tk_a", "BLOCKS", "tk_b")[1],
        keys.link_out("tk_a", "DEPENDS_ON", "tk_b")[1],
        keys.link_out("tk_a", "RELATES_TO", "tk_b")[1],
        keys.link_in("tk_a", "DUPLICATES", "tk_b")[1],
        keys.link_out("tk_a", "DUPLICATES", "tk_b")[1],
        keys.link_count("tk_a")[1],
        keys.comment("tk_a", "01j")[1],
    ]
    assert all(lo <= sk <= hi for sk in inside)
    assert not any(lo <= sk <= hi for sk in outside)
    slo, shi = keys.SIDECAR_RANGE
    assert all(slo <= sk <= shi for sk in inside + outside[:5]) and not slo <= keys.link_count("tk_a")[1] <= shi


def test_batch_pending_records_are_spelled_in_keys_and_never_look_like_a_doc():
    from domain.store import search_marks

    assert search_marks.BATCH_PREFIX is keys.SEARCH_BATCH_PREFIX
    for doc in (
        keys.search_doc_task("tk_a_b_1"),
        keys.search_doc_comment("tk_a_b_1", "cm_1"),
        keys.search_doc_artifact("ar_1"),
    ):
        assert not doc.startswith(keys.SEARCH_BATCH_PREFIX)
