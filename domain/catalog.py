"""The catalog: the explicit list of tool modules, and the table of all 62 catalog tools.

:func:`registry` builds the one :class:`~domain.registry.Registry` the transports serve, from
each area module's ``TOOLS`` — nothing registers itself on import. :data:`SEED` is the product
catalog as data (catalog: "Catalog" table): every tool's scope class, behaviour flags, whether
it takes an ``idempotencyKey``, its area, and whether it is built yet. The surface tests derive
their expectations from it (tests/test_tool_surface.py); a tool moves from ``planned`` to
``built`` in the same change that adds it to a ``TOOLS`` list.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Literal

from domain.registry import Registry, ToolSpec


@dataclass(frozen=True)
class SeedTool:
    scope: Literal["read", "write", "admin"]
    read_only: bool
    destructive: bool
    idempotent: bool
    keyed: bool
    area: str
    status: Literal["built", "planned"]


SEED: dict[str, SeedTool] = {
    "add_project_link": SeedTool("write", False, False, True, False, "projects", "built"),
    "add_task_link": SeedTool("write", False, False, True, False, "collaboration", "built"),
    "align_agent_session": SeedTool("write", False, False, True, False, "sessions", "built"),
    "archive_board": SeedTool("admin", False, True, False, False, "boards", "built"),
    "archive_task": SeedTool("write", False, True, False, False, "tasks", "built"),
    "attach_agent_session": SeedTool("write", False, False, False, True, "sessions", "built"),
    "attach_artifact": SeedTool("write", False, False, False, False, "artifacts", "built"),
    "bulk_create_tasks": SeedTool("write", False, False, False, True, "tasks", "built"),
    "bulk_move_tasks": SeedTool("write", False, False, False, True, "tasks", "built"),
    "bulk_update_tasks": SeedTool("write", False, False, True, True, "tasks", "built"),
    "complete_agent_session": SeedTool("write", False, False, True, False, "sessions", "built"),
    "create_agent_session": SeedTool("write", False, False, False, True, "sessions", "built"),
    "create_board": SeedTool("write", False, False, False, True, "boards", "built"),
    "create_comment": SeedTool("write", False, False, False, True, "collaboration", "built"),
    "create_project": SeedTool("write", False, False, False, True, "projects", "built"),
    "create_subtask": SeedTool("write", False, False, False, True, "collaboration", "built"),
    "create_task": SeedTool("write", False, False, False, True, "tasks", "built"),
    "create_workspace": SeedTool("write", False, False, False, True, "workspaces", "built"),
    "delete_comment": SeedTool("write", False, True, False, False, "collaboration", "built"),
    "delete_subtask": SeedTool("write", False, True, False, False, "collaboration", "built"),
    "get_agent_session": SeedTool("read", True, False, False, False, "sessions", "built"),
    "get_artifact": SeedTool("read", True, False, False, False, "artifacts", "built"),
    "get_board_snapshot": SeedTool("read", True, False, False, False, "boards", "built"),
    "get_project": SeedTool("read", True, False, False, False, "projects", "built"),
    "get_task": SeedTool("read", True, False, False, False, "tasks", "built"),
    "get_token_context": SeedTool("read", True, False, False, False, "context", "built"),
    "invite_member": SeedTool("admin", False, False, False, False, "members", "built"),
    "list_activity": SeedTool("read", True, False, False, False, "tasks", "built"),
    "list_agent_sessions": SeedTool("read", True, False, False, False, "sessions", "built"),
    "list_artifacts": SeedTool("read", True, False, False, False, "artifacts", "built"),
    "list_attachments": SeedTool("read", True, False, False, False, "artifacts", "built"),
    "list_boards": SeedTool("read", True, False, False, False, "boards", "built"),
    "list_columns": SeedTool("read", True, False, False, False, "boards", "built"),
    "list_comments": SeedTool("read", True, False, False, False, "collaboration", "built"),
    "list_invitations": SeedTool("admin", True, False, False, False, "members", "built"),
    "list_labels": SeedTool("read", True, False, False, False, "collaboration", "built"),
    "list_members": SeedTool("read", True, False, False, False, "members", "built"),
    "list_projects": SeedTool("read", True, False, False, False, "projects", "built"),
    "list_task_links": SeedTool("read", True, False, False, False, "collaboration", "built"),
    "list_tasks": SeedTool("read", True, False, False, False, "tasks", "built"),
    "list_workspaces": SeedTool("read", True, False, False, False, "workspaces", "built"),
    "manage_columns": SeedTool("write", False, True, False, False, "boards", "built"),
    "manage_labels": SeedTool("write", False, True, False, False, "collaboration", "built"),
    "move_task": SeedTool("write", False, False, False, False, "tasks", "built"),
    "remove_member": SeedTool("admin", False, True, False, False, "members", "built"),
    "remove_project_link": SeedTool("write", False, False, True, False, "projects", "built"),
    "remove_task_link": SeedTool("write", False, False, True, False, "collaboration", "built"),
    "rename_board": SeedTool("write", False, False, True, False, "boards", "built"),
    "resolve_projects_for_repo": SeedTool("read", True, False, False, False, "projects", "built"),
    "resume_agent_session": SeedTool("write", False, False, True, False, "sessions", "built"),
    "revoke_invitation": SeedTool("admin", False, True, False, False, "members", "built"),
    "search_artifacts": SeedTool("read", True, False, False, False, "search", "built"),
    "search_tasks": SeedTool("read", True, False, False, False, "search", "built"),
    "set_member_role": SeedTool("admin", False, False, True, False, "members", "built"),
    "set_task_assignees": SeedTool("write", False, False, True, False, "collaboration", "built"),
    "set_task_labels": SeedTool("write", False, False, True, False, "collaboration", "built"),
    "toggle_subtask": SeedTool("write", False, False, True, False, "collaboration", "built"),
    "unarchive_boards": SeedTool("admin", False, False, True, False, "boards", "built"),
    "update_comment": SeedTool("write", False, False, True, False, "collaboration", "built"),
    "update_project": SeedTool("write", False, False, True, False, "projects", "built"),
    "update_task": SeedTool("write", False, False, True, False, "tasks", "built"),
    "update_workspace": SeedTool("admin", False, False, True, False, "workspaces", "built"),
}


# Keyed tools whose catalog entry *requires* the idempotencyKey (the caller's launch nonce) instead
# of taking it as an option: a session must be created or attached at most once per launch.
KEY_REQUIRED: frozenset[str] = frozenset({"create_agent_session", "attach_agent_session"})
# Tools beyond the product catalog's 62 (issue 14): same table shape, never compared with the seed.
EXTRA: dict[str, SeedTool] = {
    "list_my_work": SeedTool("read", True, False, False, False, "tasks", "built"),
}


def tools() -> tuple[ToolSpec, ...]:
    """Every built tool, area by area (the order is irrelevant: tools/list sorts by name)."""
    from domain.tools import activity, artifacts, assignees, attachments, boards, bulk, columns, comments, labels, links, members, mywork, projects, search, sessions, subtasks, tasks, workspaces

    return (
        *workspaces.TOOLS, *boards.TOOLS, *columns.TOOLS, *tasks.TOOLS, *activity.TOOLS, *comments.TOOLS, *labels.TOOLS,
        *subtasks.TOOLS, *assignees.TOOLS, *links.TOOLS, *bulk.TOOLS, *members.TOOLS, *projects.TOOLS, *search.TOOLS,
        *artifacts.TOOLS, *sessions.TOOLS, *attachments.TOOLS, *mywork.TOOLS,
    )


@cache
def registry() -> Registry:
    """The product registry (built once per process, at import of the serving module)."""
    return Registry(tools())
