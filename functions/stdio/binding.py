"""How a stdio connection is bound: workspace, actor, checkout and lifetime, decided once.

Rules (stdio contract "Session binding"; docs/stdio.md), in the order they apply:

1. The actor is the token's principal; the token comes from ``--token-file`` or ``JENTRIX_TOKEN``.
2. The workspace is ``--workspace``, else the token's workspace pin, else the user's only
   workspace. With several workspaces, or none, there is no workspace: an observe session
   whose reason says how to choose. ``--workspace`` and the pin are *explicit*; the "only
   workspace" is *inferred*.
3. The checkout is ``--checkout`` (verified at start), else discovered from the client's roots
   (exactly one absolute ``file:`` root, verified on disk — see :mod:`.checkout`).
4. The connection may write when its workspace is explicit, or when a checkout was verified.
   Otherwise it is an observe session: reads work, writes are FORBIDDEN with a hint. So a
   session whose workspace was only inferred needs a checkout to enrol, which is the generic
   enrolment the contract describes; an explicit choice by the person running the adapter is
   never downgraded by what a client does or does not report.
5. With no workspace chosen (the user belongs to several) and a verified checkout, the workspace
   is resolved from the checkout's repository with the lookup of resolve_projects_for_repo
   (:func:`domain.store.projects.lookup`, passed in as ``resolver``): the projects linking the
   repository, or the projects of a workspace whose ``defaultRepo`` it is. Exactly one
   workspace matching binds it, writable (the checkout is verified); none or several leave an
   observe session whose reason names the candidates.
6. Invalid explicit data stops the adapter at start (:class:`StartupError`): a malformed or
   unknown workspace, one the token cannot see, a pinned token asked to bind elsewhere, a
   checkout path that fails verification, a token that does not authenticate.

``clientInfo`` is kept on the binding as metadata; nothing reads it to grant anything.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ulid import ULID

from domain import ids
from domain.context import Binding
from functions.stdio.checkout import Checkout

# repository (lowercase owner/name) -> [(workspace id, label of the match)], e.g. "Acme: Widgets project"
Resolver = Callable[[str], list[tuple[str, str]]]
PENDING_REASON = "the connection's binding is not settled yet"


class StartupError(Exception):
    """Explicit binding data is invalid; the adapter prints this and exits non-zero."""


@dataclass(frozen=True)
class WorkspaceChoice:
    workspace_id: str | None
    explicit: bool
    source: str  # flag | pin | ephemeral | only | several | none
    reason: str = ""  # why there is no workspace (observe), when workspace_id is None


def new_lifetime_id() -> str:
    """A connection lifetime id issued by the adapter (a ULID: unique and time-ordered)."""
    return f"lt_{str(ULID()).lower()}"


def choose_workspace(
    flag: str | None, pin: str | None, member_of: list[str], *, ephemeral: str | None = None
) -> WorkspaceChoice:
    """Apply rule 2. ``member_of``: the workspaces the token's user belongs to (and may see).

    Raises:
        StartupError: rule 5 for the workspace part.
    """
    if ephemeral:
        return WorkspaceChoice(ephemeral, True, "ephemeral")
    if flag is not None:
        if not ids.parse_workspace(flag):
            raise StartupError(
                f"--workspace {flag!r} is not a workspace id (they look like ws_ followed by 12 characters; list_workspaces shows yours)."
            )
        if pin and pin != flag:
            raise StartupError(
                f"The token is pinned to workspace {pin}; it cannot be bound to {flag}. Drop --workspace or use a token for {flag}."
            )
        if flag not in member_of:
            raise StartupError(f"Workspace {flag} does not exist or the token's user is not a member of it.")
        return WorkspaceChoice(flag, True, "flag")
    if pin:
        if pin not in member_of:
            raise StartupError(
                f"The token is pinned to workspace {pin}, which does not exist or no longer lists the token's user as a member."
            )
        return WorkspaceChoice(pin, True, "pin")
    if len(member_of) == 1:
        return WorkspaceChoice(member_of[0], False, "only")
    if member_of:
        shown = ", ".join(sorted(member_of)[:5]) + (", …" if len(member_of) > 5 else "")
        return WorkspaceChoice(
            None,
            False,
            "several",
            f"no workspace chosen: the token's user belongs to {len(member_of)} workspaces ({shown}); pass --workspace",
        )
    return WorkspaceChoice(None, False, "none", "no workspace: the token's user is not a member of any workspace")


def resolves_from_checkout(choice: WorkspaceChoice) -> bool:
    """Rule 5 applies: no workspace was chosen, though the user has workspaces to choose from."""
    return choice.workspace_id is None and choice.source == "several"


def from_checkout(choice: WorkspaceChoice, checkout: Checkout | None, resolver: Resolver | None) -> WorkspaceChoice:
    """Apply rule 5: the workspace the verified checkout's repository resolves to, if exactly one."""
    if checkout is None or resolver is None or not resolves_from_checkout(choice):
        return choice
    repo = checkout.repository
    try:
        matches = resolver(repo)
    except Exception as exc:  # noqa: BLE001 - a failed lookup leaves the session observing, with the reason
        return WorkspaceChoice(None, False, "several", f"{choice.reason}; looking up {repo} failed: {exc}")
    spaces: dict[str, list[str]] = {}
    for ws, label in matches:
        spaces.setdefault(ws, []).append(label)
    if len(spaces) == 1:
        return WorkspaceChoice(next(iter(spaces)), False, "checkout")
    if not spaces:
        return WorkspaceChoice(
            None,
            False,
            "several",
            f"{choice.reason}; the checkout's repository {repo} matches no project of your workspaces (no REPO link, no defaultRepo)",
        )
    shown = "; ".join(f"{ws} ({', '.join(sorted(labels)[:3])})" for ws, labels in sorted(spaces.items())[:5])
    return WorkspaceChoice(
        None,
        False,
        "several",
        f"{choice.reason}; the checkout's repository {repo} matches {len(spaces)} workspaces: {shown}",
    )


def settle(
    choice: WorkspaceChoice,
    lifetime_id: str,
    checkout: Checkout | None,
    checkout_reason: str | None,
    client_info: dict[str, Any] | None,
    resolver: Resolver | None = None,
) -> Binding:
    """Apply rules 3-5: the connection's final binding."""
    choice = from_checkout(choice, checkout, resolver)
    observe, reason = False, ""
    if choice.workspace_id is None:
        observe, reason = True, choice.reason
    elif not choice.explicit and checkout is None:
        observe = True
        reason = f"workspace {choice.workspace_id} was inferred and no checkout was verified: {checkout_reason or 'no checkout was offered'}"
    return Binding(
        workspace_id=choice.workspace_id,
        lifetime_id=lifetime_id,
        checkout=checkout.path if checkout else None,
        repository=checkout.repository if checkout else None,
        observe=observe,
        observe_reason=reason,
        client_info=client_info,
    )


def pending(choice: WorkspaceChoice, lifetime_id: str) -> Binding:
    """The binding in force until the roots round trip settles: observe, scoped to the workspace."""
    return Binding(
        workspace_id=choice.workspace_id, lifetime_id=lifetime_id, observe=True, observe_reason=PENDING_REASON
    )


def describe(binding: Binding) -> dict[str, Any]:
    """The binding as logged on stderr (one JSON object; tests read it)."""
    return {
        "lifetimeId": binding.lifetime_id,
        "workspaceId": binding.workspace_id,
        "checkout": binding.checkout,
        "repository": binding.repository,
        "observe": binding.observe,
        "observeReason": binding.observe_reason or None,
        "clientInfo": binding.client_info,
    }
