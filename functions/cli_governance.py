"""``jentrix invite``, ``jentrix approvals``, ``jentrix governance`` and ``jentrix workspace``: the human
side of governance.

    jentrix invite link INVITATION_ID --token-file F      print a new invitation link secret, once
    jentrix invite accept (--secret S | --secret-file F) [--display-name N]
    jentrix approvals list --workspace WS --token-file F [--history] [--json]
    jentrix approvals approve|reject APPROVAL_ID --token-file F
    jentrix governance set --workspace WS --policy ALLOW|REQUIRE_APPROVAL|DENY --token-file F [--pack membership]
    jentrix workspace operator-role --workspace WS (--role ADMIN | --clear) --token-file F

Every command but ``invite accept`` authenticates with ``--token-file``: a file holding a *human*
token (``jentrix token create --human``) of a member holding the role the action needs. Table
access and an e-mail address alone are never enough (docs/governance.md, "Trust boundary").
``invite accept`` is authenticated by the invitation secret itself.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from functions.cli_common import CliError, add_target_flags, connect


def _secret_from(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}", code=2) from None


def _human(args: argparse.Namespace, workspace_id: str, needed: str) -> Any:
    """The verified human principal of ``--token-file``, a member of ``workspace_id`` with ``needed``."""
    from domain import access, auth

    principal = auth.authenticate(_secret_from(args.token_file))
    if principal is None:
        raise CliError("the token in --token-file is unknown, revoked or expired.")
    if not principal.human:
        raise CliError(
            "this command needs a human's token (jentrix token create --human); an agent's token cannot approve or hand out access."
        )
    if principal.workspace_pin and principal.workspace_pin != workspace_id:
        raise CliError(f"the token is pinned to {principal.workspace_pin}, not {workspace_id}.")
    standing = access.standing(workspace_id, principal.user_id, needed)
    if standing.role is None:
        raise CliError(f"the token's user is not a member of {workspace_id}.")
    if not standing.allowed:
        raise CliError(f"this needs the {needed} role in {workspace_id}; the token's user is {standing.role}.")
    return principal


# -- invite -----------------------------------------------------------------------------------
def cmd_invite_link(args: argparse.Namespace) -> int:
    from domain import access, ids
    from domain.store import governance

    ref = ids.parse_invitation(args.invitation_id)
    if ref is None:
        raise CliError(f"{args.invitation_id!r} is not an invitation id (inv_…).", code=2)
    connect(args)
    row = governance.get_invitation(ref)
    needed = access.role_to_grant(row.role if row is not None else None)
    principal = _human(args, ref.workspace_id, needed)
    if row is None or row.state != "PENDING" or not governance.live(row):  # type: ignore[arg-type]
        raise CliError(f"no pending invitation {args.invitation_id} (see list_invitations).")
    try:
        secret = governance.issue_link(
            row, actor_id=principal.user_id, actor_roles=access.roles_at_least(needed), source="ui"
        )
    except governance.InvitationClosed:
        raise CliError(f"invitation {args.invitation_id} is no longer pending.") from None
    print(f"Invitation link for {row.email} ({row.role}) — shown only now; any earlier link stops working:")
    print(secret)
    print(f"The invitee runs: jentrix invite accept --secret {secret}")
    return 0


def cmd_invite_accept(args: argparse.Namespace) -> int:
    """Accept an invitation link as the person it names (created when new), through the same
    operation as the console's invitation page (:func:`domain.console_actions.accept_invitation`)."""
    from domain import auth, console_actions

    secret = args.secret or (_secret_from(args.secret_file) if args.secret_file else None)
    if not secret:
        raise CliError("pass --secret or --secret-file.", code=2)
    connect(args)
    row = console_actions.open_invitation(secret)
    if row is None:
        raise CliError(
            "this invitation link is not valid: it was revoked, used, replaced by a newer link, or has expired."
        )
    user = auth.user_by_email(row.email)
    if user is None:
        created = auth.create_user(row.email, args.display_name or row.email.split("@")[0])
        print(f"Created user {created.email} ({created.userId}).")
        user = auth.user_by_id(created.userId, consistent=True)
    assert user is not None  # just created or found by its e-mail claim
    try:
        inv, member = console_actions.accept_invitation(user, secret)
    except console_actions.Refused as exc:
        raise CliError(f"{exc.message[:1].lower()}{exc.message[1:]}") from None
    print(
        f"{user.email} joined {inv.workspaceId} as {member.role}. Mint a token with: jentrix token create --user-email {user.email}"
    )
    return 0


# -- approvals --------------------------------------------------------------------------------
def _approver_role(row: Any) -> str:
    from domain import console_actions

    return console_actions.approver_role(row)  # one policy for the CLI and the approvals page


def _approval_view(row: Any) -> dict[str, Any]:
    return {
        "id": row.approvalId,
        "tool": row.tool,
        "wouldDo": row.summary,
        "state": row.state,
        "callerId": row.callerId,
        "tokenId": row.tokenId,
        "createdAt": row.createdAt,
        "expiresAt": row.expiresAt,
        "decidedBy": row.decidedBy,
        "decidedAt": row.decidedAt,
        "consumedAt": row.consumedAt,
    }


def cmd_approvals_list(args: argparse.Namespace) -> int:
    from domain import ids
    from domain.store import governance, members

    if not ids.parse_workspace(args.workspace):
        raise CliError(f"{args.workspace!r} is not a workspace id (ws_…).", code=2)
    connect(args)
    _human(args, args.workspace, "ADMIN")
    emails = {
        m.userId: m.email for m in members.list_members(args.workspace)
    }  # who asked, by address (the ids stay in --json)

    def who(user_id: str | None) -> str:
        return f"{emails[user_id]} ({user_id})" if user_id in emails else str(user_id)

    rows = [_approval_view(r) for r in governance.approvals(args.workspace, pending_only=not args.history)]
    log = governance.history_entries(args.workspace) if args.history else None
    if args.json:
        print(json.dumps({"approvals": rows, **({"history": log} if log is not None else {})}))
        return 0
    if not rows:
        print("No pending approval requests." if not args.history else "No approval requests.")
    for r in rows:
        print(
            f"{r['id']}  {r['state']:<9} {r['tool']:<16} expires {r['expiresAt']}  by {who(r['callerId'])}, token {r['tokenId']}"
        )
        print(f"    {r['wouldDo']}")
    if log is not None:
        print()
        print("Workspace log (newest first):")
        for e in log:
            print(f"{e['at']}  {e['source']:<3} {e['type']:<24} {who(e['actorId'])}  {e['summary']}")
    return 0


def _decide(args: argparse.Namespace, decision: str) -> int:
    from domain import access, ids
    from domain.store import db, governance

    ref = ids.parse_approval(args.approval_id)
    if ref is None:
        raise CliError(f"{args.approval_id!r} is not an approval id (ap_…).", code=2)
    connect(args)
    row = governance.get_approval(ref)
    needed = _approver_role(row) if row is not None else "ADMIN"
    principal = _human(args, ref.workspace_id, needed)
    if row is None:
        raise CliError(f"no approval request {args.approval_id}.")
    try:
        governance.decide(row, decision, actor_id=principal.user_id, actor_roles=access.roles_at_least(needed))
    except governance.NotPending:
        raise CliError(f"{args.approval_id} is not pending any more (decided, used or expired).") from None
    except db.Missing:
        raise CliError(f"your role in {ref.workspace_id} changed; nothing was written.") from None
    if decision == "APPROVED":
        print(
            f"Approved {row.approvalId}: {row.summary}. The agent's identical call (same arguments, same token) goes through once, until {row.expiresAt}."
        )
    else:
        print(f"Rejected {row.approvalId}: {row.summary}.")
    return 0


def cmd_approvals_approve(args: argparse.Namespace) -> int:
    return _decide(args, "APPROVED")


def cmd_approvals_reject(args: argparse.Namespace) -> int:
    return _decide(args, "REJECTED")


# -- governance -------------------------------------------------------------------------------
def cmd_governance_set(args: argparse.Namespace) -> int:
    from domain import ids
    from domain.store import db, governance

    if not ids.parse_workspace(args.workspace):
        raise CliError(f"{args.workspace!r} is not a workspace id (ws_…).", code=2)
    connect(args)
    principal = _human(args, args.workspace, "OWNER")
    try:
        governance.set_policy(args.workspace, args.pack, args.policy, actor_id=principal.user_id, source="ui")
    except db.Missing:
        raise CliError(f"your role in {args.workspace} changed; nothing was written.") from None
    print(f"Governance of {args.pack} in {args.workspace}: {args.policy} for agents' calls (humans are never parked).")
    return 0


# -- workspace operator-role ----------------------------------------------------------------------
def cmd_workspace_operator_role(args: argparse.Namespace) -> int:
    """Set (``--role ADMIN``) or clear (``--clear``) the role a workspace grants operator authority
    to (docs/coordination.md, "Operator authority"); a human OWNER's token."""
    from domain import ids, operator
    from domain.store import db

    if not ids.parse_workspace(args.workspace):
        raise CliError(f"{args.workspace!r} is not a workspace id (ws_…).", code=2)
    connect(args)
    principal = _human(args, args.workspace, "OWNER")
    role = None if args.clear else args.role
    try:
        operator.set_grant(args.workspace, role, actor_id=principal.user_id, human=principal.human, source="cli")
    except db.Missing:
        raise CliError(f"your role in {args.workspace} changed; nothing was written.") from None
    if role:
        print(f"Operator authority in {args.workspace}: human OWNERs and human {role}s (agents' tokens never).")
    else:
        print(f"Operator authority in {args.workspace}: human OWNERs only.")
    return 0


def add_parsers(sub: Any) -> None:
    def with_token(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--token-file",
            required=True,
            metavar="FILE",
            help="file holding a human token (jentrix token create --human) of a member with the needed role",
        )
        add_target_flags(p)

    invite = sub.add_parser("invite", help="print an invitation link, or accept one")
    isub = invite.add_subparsers(dest="action", metavar="ACTION", required=True)
    link = isub.add_parser(
        "link", help="issue a new link secret for a pending invitation and print it once (human ADMIN)"
    )
    link.add_argument("invitation_id", metavar="INVITATION_ID")
    with_token(link)
    link.set_defaults(func=cmd_invite_link)
    acc = isub.add_parser("accept", help="join the workspace with an invitation link (creates your user if needed)")
    acc.add_argument("--secret", help="the link secret you were given")
    acc.add_argument("--secret-file", metavar="FILE", help="a file holding the secret")
    acc.add_argument("--display-name", help="your display name, when a user is created")
    add_target_flags(acc)
    acc.set_defaults(func=cmd_invite_accept)

    approvals = sub.add_parser("approvals", help="list, approve or reject agents' parked membership changes")
    asub = approvals.add_subparsers(dest="action", metavar="ACTION", required=True)
    lst = asub.add_parser("list", help="pending approval requests of a workspace")
    lst.add_argument("--workspace", required=True, metavar="WS_ID")
    lst.add_argument(
        "--history",
        action="store_true",
        help="every request, and the workspace log of membership changes and decisions",
    )
    lst.add_argument("--json", action="store_true", help="print JSON")
    with_token(lst)
    lst.set_defaults(func=cmd_approvals_list)
    for name, func in (("approve", cmd_approvals_approve), ("reject", cmd_approvals_reject)):
        p = asub.add_parser(name, help=f"{name} one pending request")
        p.add_argument("approval_id", metavar="APPROVAL_ID")
        with_token(p)
        p.set_defaults(func=func)

    gov = sub.add_parser("governance", help="set a workspace's governance policy (human OWNER)")
    gsub = gov.add_subparsers(dest="action", metavar="ACTION", required=True)
    st = gsub.add_parser("set", help="set the policy for agents' calls of a governed pack")
    st.add_argument("--workspace", required=True, metavar="WS_ID")
    st.add_argument("--policy", required=True, choices=["ALLOW", "REQUIRE_APPROVAL", "DENY"])
    st.add_argument(
        "--pack",
        default="membership",
        choices=["membership"],
        help="the governed tools (membership: invite_member, remove_member, set_member_role)",
    )
    with_token(st)
    st.set_defaults(func=cmd_governance_set)

    wsp = sub.add_parser("workspace", help="workspace settings (human OWNER)")
    wsub = wsp.add_subparsers(dest="action", metavar="ACTION", required=True)
    op = wsub.add_parser(
        "operator-role", help="grant operator authority to a role below OWNER, or keep it to OWNERs (--clear)"
    )
    op.add_argument("--workspace", required=True, metavar="WS_ID")
    which = op.add_mutually_exclusive_group(required=True)
    which.add_argument("--role", choices=["ADMIN"], help="human members at this role or above hold it too")
    which.add_argument("--clear", action="store_true", help="human OWNERs only (the default)")
    with_token(op)
    op.set_defaults(func=cmd_workspace_operator_role)
