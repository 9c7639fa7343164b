"""Operator authority (docs/coordination.md, "Operator authority").

Some coordination tools act for the people who run a workspace, not for the agents working in it:
approving a prepared consultation, reading recovery evidence, reading the operators' attention
list. On this product's model a caller holds operator authority in a workspace when

* its credential is held by a human (``Principal.human``: a token minted with ``--human``, a
  console or OAuth sign-in), never an agent's, whatever the user's role; and
* that human is an OWNER of the workspace, or the workspace grants operator authority to a lower
  role (``WorkspaceRow.operatorRole``, e.g. ``ADMIN``) and the member's role reaches it.

A spec declares the need (``ToolSpec.operator``); :func:`admit` is called by the access step
(domain.access.authorize) after the role and ref checks, so no handler decides it. The workspace item is
read in the membership's BatchGetItem (:func:`workspace_item`): the check costs no request. This
module imports neither the access step nor the registry (no import circle).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from domain import errors
from domain.auth import ROLE_RANK

if TYPE_CHECKING:
    from domain.context import CallContext

GRANTABLE = ("ADMIN", "OWNER")
#: the roles a workspace can grant operator authority to besides OWNER (``set_grant``); clearing
#: the grant leaves it to OWNERs
GRANTS = tuple(r for r in GRANTABLE if r != "OWNER")
SOURCES = ("cli", "ui")


def holds(*, human: bool, role: str, granted_role: str | None) -> bool:
    """Whether a member holds operator authority: a human OWNER, or a human whose ``role`` reaches
    the workspace's ``granted_role`` (``None``: only OWNERs)."""
    if not human or role not in ROLE_RANK:
        return False
    if role == "OWNER":
        return True
    return granted_role in ROLE_RANK and ROLE_RANK[role] >= ROLE_RANK[granted_role or "OWNER"]


def needed(flag: bool | str, args: Any) -> bool:
    """Whether a call needs operator authority: ``flag`` is the spec's ``operator`` (``True``, or
    the boolean argument that switches the need on)."""
    if flag is False:
        return False
    if isinstance(flag, str):
        return getattr(args, flag, None) is True
    return True


def workspace_item(workspace_id: str) -> tuple[str, str]:
    """The workspace item's key, read with the membership (same BatchGetItem)."""
    from domain.store import keys

    return keys.workspace_head(workspace_id)


def admit(tool: str, flag: bool | str, ctx: CallContext, workspace_id: str, member_role: str, args: Any) -> None:
    """Refuse the call unless the caller holds operator authority in the workspace (whose item the
    access step read with the membership).

    Raises:
        ToolError: FORBIDDEN naming what operator authority is and how it is granted.
    """
    if not needed(flag, args):
        return
    head = ctx.item(workspace_item(workspace_id))
    granted = getattr(head, "operatorRole", None)
    if holds(human=ctx.principal.human, role=member_role, granted_role=granted):
        return
    who = "an agent's credential" if not ctx.principal.human else f"a {member_role} without the grant"
    raise errors.forbidden(
        f"{tool} needs operator authority in this workspace, and this is {who}.",
        "A human OWNER (or a human at the role the workspace grants it to) runs it with a human credential.",
    )


def set_grant(workspace_id: str, role: str | None, *, actor_id: str, human: bool, source: str) -> None:
    """Set the role a workspace grants operator authority to (``role``, one of :data:`GRANTS`), or
    clear it (``None``: human OWNERs only). Only a human OWNER does this, from the CLI
    (``jentrix workspace operator-role``) or the console (``source``: ``cli`` or ``ui``); no tool
    does. One conditional write with a workspace log entry
    (:func:`domain.store.coordination.set_operator_role`); the next operator call sees it (the
    access step reads the workspace item fresh every time).

    Raises:
        ValueError: ``role`` is not grantable or ``source`` is unknown (nothing written).
        PermissionError: ``human`` is false: an agent's credential never changes who operates.
        Missing: no such workspace, or ``actor_id`` is not an OWNER of it at commit.
    """
    if role is not None and role not in GRANTS:
        raise ValueError(f"operator authority can be granted to {', '.join(GRANTS)} (or cleared), not {role!r}")
    if source not in SOURCES:
        raise ValueError(f"unknown source {source!r}")
    if not human:
        raise PermissionError("only a human OWNER sets who holds operator authority")
    from domain.store import coordination

    coordination.set_operator_role(workspace_id, role, actor_id=actor_id, source=source)
