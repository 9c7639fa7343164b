"""Repository names: the one normaliser behind ``defaultRepo`` (update_workspace), REPO project
links and the repository lookup (resolve_projects_for_repo, the stdio binding from a checkout).

A repository is named by its lowercase GitHub ``owner/name``. Accepted spellings::

    owner/name                        Owner/Name.git
    https://github.com/Owner/Name     https://github.com/Owner/Name.git   (http, www., trailing /)
    git@github.com:Owner/Name.git     ssh://git@github.com/Owner/Name.git

Anything else (another host, a path with more or fewer parts, characters GitHub refuses in
owner or repository names) is ``None``; callers turn that into INVALID_INPUT.
"""

from __future__ import annotations

import re

_OWNER = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})"
_NAME = r"[A-Za-z0-9._-]{1,100}"
_PATTERNS = (
    re.compile(rf"^(?P<owner>{_OWNER})/(?P<name>{_NAME})$"),
    re.compile(rf"^https?://(?:www\.)?github\.com/(?P<owner>{_OWNER})/(?P<name>{_NAME})/?$", re.IGNORECASE),
    re.compile(rf"^git@github\.com:(?P<owner>{_OWNER})/(?P<name>{_NAME})/?$", re.IGNORECASE),
    re.compile(rf"^ssh://git@github\.com(?::22)?/(?P<owner>{_OWNER})/(?P<name>{_NAME})/?$", re.IGNORECASE),
)
FORMS = "owner/name, https://github.com/owner/name(.git) or git@github.com:owner/name(.git)"


def normalise_repo(value: str) -> str | None:
    """The lowercase ``owner/name`` that ``value`` names, or ``None`` if it names no GitHub repository.

    >>> normalise_repo("https://github.com/Owner/Name.git")
    'owner/name'
    """
    text = value.strip()
    for pattern in _PATTERNS:
        m = pattern.fullmatch(text)
        if not m:
            continue
        owner, name = m.group("owner"), m.group("name")
        if name.lower().endswith(".git"):
            name = name[:-4]
        if not name or name in {".", ".."} or owner.endswith("-"):
            return None
        return f"{owner}/{name}".lower()
    return None
