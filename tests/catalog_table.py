"""The product catalog as the tests expect it: an oracle, never imported by the product.

Each tool's scope class, behaviour flags (readOnly, destructive, idempotent), whether it takes an
idempotency key, and its area, transcribed from the catalog (seed 002, its "Catalog" table; the
coordination tools from seed 000). The served tools take these facts from their own
``ToolSpec`` only; tests/test_tool_surface.py checks each spec against this table, and, when the
seed document sits beside the checkout, this table against the document.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class SeedTool:
    scope: Literal["read", "write", "admin"]
    read_only: bool
    destructive: bool
    idempotent: bool
    keyed: bool
    area: str


CATALOG: dict[str, SeedTool] = {
    "add_project_link": SeedTool("write", False, False, True, False, "projects"),
    "add_task_link": SeedTool("write", False, False, True, False, "collaboration"),
    "align_agent_session": SeedTool("write", False, False, True, False, "sessions"),
    "archive_board": SeedTool("admin", False, True, False, False, "boards"),
    "archive_task": SeedTool("write", False, True, False, False, "tasks"),
    "attach_agent_session": SeedTool("write", False, False, False, True, "sessions"),
    "attach_artifact": SeedTool("write", False, False, False, False, "artifacts"),
    "bulk_create_tasks": SeedTool("write", False, False, False, True, "tasks"),
    "bulk_move_tasks": SeedTool("write", False, False, False, True, "tasks"),
    "bulk_update_tasks": SeedTool("write", False, False, True, True, "tasks"),
    "complete_agent_session": SeedTool("write", False, False, True, False, "sessions"),
    "create_agent_session": SeedTool("write", False, False, False, True, "sessions"),
    "create_board": SeedTool("write", False, False, False, True, "boards"),
    "create_comment": SeedTool("write", False, False, False, True, "collaboration"),
    "create_project": SeedTool("write", False, False, False, True, "projects"),
    "create_subtask": SeedTool("write", False, False, False, True, "collaboration"),
    "create_task": SeedTool("write", False, False, False, True, "tasks"),
    "create_workspace": SeedTool("write", False, False, False, True, "workspaces"),
    "delete_comment": SeedTool("write", False, True, False, False, "collaboration"),
    "delete_subtask": SeedTool("write", False, True, False, False, "collaboration"),
    "get_agent_session": SeedTool("read", True, False, False, False, "sessions"),
    "get_artifact": SeedTool("read", True, False, False, False, "artifacts"),
    "get_board_snapshot": SeedTool("read", True, False, False, False, "boards"),
    "get_project": SeedTool("read", True, False, False, False, "projects"),
    "get_task": SeedTool("read", True, False, False, False, "tasks"),
    "get_token_context": SeedTool("read", True, False, False, False, "context"),
    "invite_member": SeedTool("admin", False, False, False, False, "members"),
    "list_activity": SeedTool("read", True, False, False, False, "tasks"),
    "list_agent_sessions": SeedTool("read", True, False, False, False, "sessions"),
    "list_artifacts": SeedTool("read", True, False, False, False, "artifacts"),
    "list_attachments": SeedTool("read", True, False, False, False, "artifacts"),
    "list_boards": SeedTool("read", True, False, False, False, "boards"),
    "list_columns": SeedTool("read", True, False, False, False, "boards"),
    "list_comments": SeedTool("read", True, False, False, False, "collaboration"),
    "list_invitations": SeedTool("admin", True, False, False, False, "members"),
    "list_labels": SeedTool("read", True, False, False, False, "collaboration"),
    "list_members": SeedTool("read", True, False, False, False, "members"),
    "list_projects": SeedTool("read", True, False, False, False, "projects"),
    "list_task_links": SeedTool("read", True, False, False, False, "collaboration"),
    "list_tasks": SeedTool("read", True, False, False, False, "tasks"),
    "list_workspaces": SeedTool("read", True, False, False, False, "workspaces"),
    "manage_columns": SeedTool("write", False, True, False, False, "boards"),
    "manage_labels": SeedTool("write", False, True, False, False, "collaboration"),
    "move_task": SeedTool("write", False, False, False, False, "tasks"),
    "remove_member": SeedTool("admin", False, True, False, False, "members"),
    "remove_project_link": SeedTool("write", False, False, True, False, "projects"),
    "remove_task_link": SeedTool("write", False, False, True, False, "collaboration"),
    "rename_board": SeedTool("write", False, False, True, False, "boards"),
    "resolve_projects_for_repo": SeedTool("read", True, False, False, False, "projects"),
    "resume_agent_session": SeedTool("write", False, False, True, False, "sessions"),
    "revoke_invitation": SeedTool("admin", False, True, False, False, "members"),
    "search_artifacts": SeedTool("read", True, False, False, False, "search"),
    "search_tasks": SeedTool("read", True, False, False, False, "search"),
    "set_member_role": SeedTool("admin", False, False, True, False, "members"),
    "set_task_assignees": SeedTool("write", False, False, True, False, "collaboration"),
    "set_task_labels": SeedTool("write", False, False, True, False, "collaboration"),
    "toggle_subtask": SeedTool("write", False, False, True, False, "collaboration"),
    "unarchive_boards": SeedTool("admin", False, False, True, False, "boards"),
    "update_comment": SeedTool("write", False, False, True, False, "collaboration"),
    "update_project": SeedTool("write", False, False, True, False, "projects"),
    "update_task": SeedTool("write", False, False, True, False, "tasks"),
    "update_workspace": SeedTool("admin", False, False, True, False, "workspaces"),
}


# Keyed tools whose catalog entry *requires* the idempotencyKey (the caller's launch nonce) instead
# of taking it as an option: a session must be created or attached at most once per launch.
KEY_REQUIRED: frozenset[str] = frozenset({"create_agent_session", "attach_agent_session"})
# Tools beyond the product catalog's 62 (issue 14): same table shape, never compared with the seed.
EXTRA: dict[str, SeedTool] = {
    "list_my_work": SeedTool("read", True, False, False, False, "tasks"),
}


# The coordination toolset (issue 29; docs/coordination.md): tool names from the coordination spec
# (seed 000), served only when asked for over HTTP and by default in jentrix mcp (domain.toolsets.OPT_IN).
# Same table shape; counted apart from the catalog's 62.
COORDINATION: dict[str, SeedTool] = {
    "mj_accept_artifact": SeedTool("write", False, False, False, True, "coordination"),
    "mj_artifact": SeedTool("read", True, False, False, False, "coordination"),
    "mj_artifact_comments": SeedTool("read", True, False, False, False, "coordination"),
    "mj_channel_messages": SeedTool("read", True, False, False, False, "coordination"),
    "mj_channels": SeedTool("read", True, False, False, False, "coordination"),
    "mj_promote_message": SeedTool("write", False, False, False, True, "coordination"),
    "mj_promotions": SeedTool("read", True, False, False, False, "coordination"),
    "mj_finish": SeedTool("write", False, False, False, True, "coordination"),
    "mj_request_artifact_changes": SeedTool("write", False, False, False, True, "coordination"),
    "mj_submit_research": SeedTool("write", False, False, False, True, "coordination"),
    "mj_answer": SeedTool("write", False, False, False, True, "coordination"),
    "mj_ask": SeedTool("write", False, False, False, True, "coordination"),
    "mj_begin": SeedTool("write", False, False, False, True, "coordination"),
    "mj_brief": SeedTool("read", True, False, False, False, "coordination"),
    "mj_cancel_request": SeedTool("write", False, False, False, True, "coordination"),
    "mj_inbox": SeedTool("read", False, False, True, False, "coordination"),
    "mj_peers": SeedTool("read", True, False, False, False, "coordination"),
    "mj_post": SeedTool("write", False, False, False, True, "coordination"),
    "mj_reply_late": SeedTool("write", False, False, False, True, "coordination"),
    "mj_request": SeedTool("read", True, False, False, False, "coordination"),
    "mj_start_work": SeedTool("write", False, False, False, True, "coordination"),
    "mj_wait_request": SeedTool("read", True, False, False, False, "coordination"),
    "mj_work_context": SeedTool("read", True, False, False, False, "coordination"),
    # issue 30: linked integration work
    "mj_accept_integration": SeedTool("write", False, False, False, True, "coordination"),
    "mj_freeze_integration": SeedTool("write", False, False, False, True, "coordination"),
    "mj_integration": SeedTool("read", True, False, False, False, "coordination"),
    "mj_link_helper": SeedTool("write", False, False, False, True, "coordination"),
    # issue 30: continuity and recovery evidence
    "mj_continuation": SeedTool("read", True, False, False, False, "coordination"),
    "mj_recovery_evidence": SeedTool("read", True, False, False, False, "coordination"),
    # issue 30: consultation preparation
    "mj_consult": SeedTool("write", False, False, False, True, "coordination"),
    "mj_consult_approve": SeedTool("write", False, False, False, True, "coordination"),
    "mj_consult_detail": SeedTool("read", True, False, False, False, "coordination"),
    "mj_consult_profiles": SeedTool("read", True, False, False, False, "coordination"),
    "mj_consult_queue": SeedTool("read", True, False, False, False, "coordination"),
    "mj_consult_research_input": SeedTool("write", False, False, False, True, "coordination"),
    "mj_consult_results": SeedTool("write", False, False, False, True, "coordination"),
}
