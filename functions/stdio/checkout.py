"""Checkout verification: a directory on disk, inside a git checkout, whose ``origin`` is on GitHub.

Used twice: for an explicit ``--checkout`` (a failure stops the adapter at start) and for the
client's roots (a failure makes the connection an observe session). Remote URLs are normalised
to ``owner/name`` (lowercase, ``.git`` and userinfo dropped) from the https, ssh and scp-like
forms GitHub hands out. A small parser is kept here on purpose: ``giturlparse`` 0.16 was tried
and raises ``AttributeError`` on ``ssh://…:22/…`` URLs and files ``www.github.com`` as GitLab.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

_GITHUB_HOSTS = {"github.com", "www.github.com"}
_SEGMENT = re.compile(r"^[A-Za-z0-9_.-]+$")
_SCP_LIKE = re.compile(r"^(?:[^@/\s]+@)?(?P<host>[^:/\s]+):(?P<path>[^/].*)$")
GIT_TIMEOUT_SECONDS = 10


class CheckoutError(Exception):
    """Why a directory cannot serve as the connection's checkout (a sentence for a person)."""


@dataclass(frozen=True)
class Checkout:
    path: str  # the checkout's top-level directory, resolved
    repository: str  # owner/name, lowercase


def normalise_remote(url: str) -> str | None:
    """``owner/name`` for a GitHub remote URL, else ``None``.

    >>> normalise_remote("git@github.com:Acme/Widgets.git")
    'acme/widgets'
    """
    url = url.strip()
    if not url:
        return None
    host: str | None
    path: str
    if "://" in url:
        parts = urlsplit(url)
        if parts.scheme.lower() not in ("https", "http", "ssh", "git", "git+ssh", "ssh+git"):
            return None
        try:
            host = parts.hostname  # lowercased, userinfo and port removed
        except ValueError:
            return None
        path = parts.path
    else:
        m = _SCP_LIKE.match(url)
        if not m:
            return None
        host, path = m.group("host").lower(), m.group("path")
    if host not in _GITHUB_HOSTS:
        return None
    segments = [s for s in path.strip("/").split("/") if s]
    if len(segments) != 2:
        return None
    owner, name = segments
    if name.lower().endswith(".git"):
        name = name[:-4]
    if not owner or not name or not _SEGMENT.match(owner) or not _SEGMENT.match(name) or name in (".", ".."):
        return None
    return f"{owner}/{name}".lower()


def _git(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_TERMINAL_PROMPT"] = "0"
    return subprocess.run(
        ["git", "-C", str(directory), *args],
        capture_output=True,
        text=True,
        timeout=GIT_TIMEOUT_SECONDS,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def verify_checkout(directory: str | os.PathLike[str]) -> Checkout:
    """Check ``directory`` exists, is a directory inside a git checkout with a GitHub ``origin``.

    Raises:
        CheckoutError: naming the first requirement that failed.
    """
    path = Path(directory)
    if not path.is_absolute():
        raise CheckoutError(f"{str(path)!r} is not an absolute path")
    if not path.exists():
        raise CheckoutError(f"{path} does not exist")
    if not path.is_dir():
        raise CheckoutError(f"{path} is not a directory")
    try:
        top = _git(path, "rev-parse", "--show-toplevel")
    except FileNotFoundError:
        raise CheckoutError("git is not installed, so the checkout cannot be verified") from None
    except subprocess.TimeoutExpired:
        raise CheckoutError(f"git did not answer within {GIT_TIMEOUT_SECONDS}s in {path}") from None
    if top.returncode != 0 or not top.stdout.strip():
        raise CheckoutError(f"{path} is not inside a git checkout")
    remote = _git(path, "remote", "get-url", "origin")
    if remote.returncode != 0 or not remote.stdout.strip():
        raise CheckoutError(f"the git checkout at {top.stdout.strip()} has no 'origin' remote")
    repository = normalise_remote(remote.stdout.strip())
    if repository is None:
        raise CheckoutError(f"the origin remote {remote.stdout.strip()!r} is not a GitHub owner/name repository")
    return Checkout(path=str(Path(top.stdout.strip()).resolve()), repository=repository)


def root_path(uri: Any) -> Path:
    """The local directory a ``file:`` root URI names.

    Raises:
        CheckoutError: not a string, not ``file:``, not local, or not absolute.
    """
    if not isinstance(uri, str):
        raise CheckoutError("the root has no string uri")
    parts = urlsplit(uri)
    if parts.scheme.lower() != "file":
        raise CheckoutError(f"the root {uri!r} is not a file: URI")
    if parts.netloc not in ("", "localhost"):
        raise CheckoutError(f"the root {uri!r} names another host ({parts.netloc})")
    path = unquote(parts.path)
    if not path.startswith("/"):
        raise CheckoutError(f"the root {uri!r} is not an absolute path")
    return Path(path)


def checkout_from_roots(roots: Any) -> Checkout:
    """The checkout named by a ``roots/list`` result's ``roots`` (exactly one usable root).

    Raises:
        CheckoutError: no roots, several roots, or the one root fails :func:`verify_checkout`.
    """
    if not isinstance(roots, list) or not roots:
        raise CheckoutError("the client listed no roots")
    if len(roots) > 1:
        raise CheckoutError(
            f"the client listed {len(roots)} roots, so the checkout is ambiguous; exactly one is needed"
        )
    root = roots[0]
    if not isinstance(root, dict):
        raise CheckoutError("the client's root is not an object")
    return verify_checkout(root_path(root.get("uri")))
