"""The shape of our own bearer secrets: a type prefix, random base62 and a checksum suffix.

A token minted now is ``<prefix><36 random base62><6 base62 checksum>``, where the prefix is
``tm_`` (personal access token) or ``tmo_`` (OAuth access token) and the checksum is the CRC32 of
``prefix + random`` written in base62, left-padded to six characters. The checksum lets two
things work without storage: the redactor (:mod:`domain.redaction`) recognises our tokens with no
false positives, and the auth path refuses a mistyped token before any DynamoDB read.

Tokens minted before the checksum existed are ``tm_`` + 43 url-safe characters
(``secrets.token_urlsafe(32)``); they stay valid and are looked up as before.

Pure standard library: :mod:`domain.redaction` imports it, and it must stay cheap to import.
"""

from __future__ import annotations

import secrets
import zlib
from collections.abc import Callable
from typing import Literal

PREFIXES = ("tmo_", "tm_")  # longest first, so "tmo_" is not read as "tm_" + "o_..."
ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
RANDOM_CHARS = 36  # 36 * log2(62) ~ 214 bits
CHECKSUM_CHARS = 6  # 62**6 > 2**32
BODY_CHARS = RANDOM_CHARS + CHECKSUM_CHARS  # 42: one less than a legacy body, so the two never collide
LEGACY_BODY_CHARS = 43
_BASE62 = frozenset(ALPHABET)
_URLSAFE = frozenset(ALPHABET + "-_")

Shape = Literal["checksummed", "legacy", "malformed"]


def base62(value: int, width: int) -> str:
    digits = []
    while value:
        value, rest = divmod(value, 62)
        digits.append(ALPHABET[rest])
    return "".join(reversed(digits)).rjust(width, "0")


def checksum(prefix: str, random_part: str) -> str:
    return base62(zlib.crc32((prefix + random_part).encode("ascii")), CHECKSUM_CHARS)


def mint(prefix: str = "tm_") -> str:
    """A fresh secret with the checksum suffix."""
    if prefix not in PREFIXES:
        raise ValueError(f"unknown token prefix {prefix!r}")
    random_part = "".join(secrets.choice(ALPHABET) for _ in range(RANDOM_CHARS))
    return prefix + random_part + checksum(prefix, random_part)


def split(token: str) -> tuple[str, str] | None:
    for prefix in PREFIXES:
        if token.startswith(prefix):
            return prefix, token[len(prefix) :]
    return None


def checksum_ok(token: str) -> bool:
    """True for a well-formed checksummed token (any prefix of ours)."""
    parts = split(token)
    if parts is None:
        return False
    prefix, body = parts
    if len(body) != BODY_CHARS or not _BASE62.issuperset(body):
        return False
    return checksum(prefix, body[:RANDOM_CHARS]) == body[RANDOM_CHARS:]


def shape(token: str) -> Shape:
    """Classify a presented secret without storage: checksummed, legacy PAT, or malformed.

    ``malformed`` covers a wrong checksum (a typo), a wrong length and characters outside the
    alphabet; such a token can never match a stored digest, so callers refuse it without a read.
    """
    if checksum_ok(token):
        return "checksummed"
    parts = split(token)
    if parts and parts[0] == "tm_" and len(parts[1]) == LEGACY_BODY_CHARS and _URLSAFE.issuperset(parts[1]):
        return "legacy"
    return "malformed"


_ON_REVOKED: list[Callable[[], None]] = []


def on_revoked(hook: Callable[[], None]) -> None:
    """Register ``hook`` to run after any token or grant is revoked in this process (the token
    caches of :mod:`domain.auth` drop their entries). Lives here so that the module revoking
    (:mod:`domain.oauth`) and the modules caching never import each other."""
    _ON_REVOKED.append(hook)


def revoked() -> None:
    """Run the :func:`on_revoked` hooks: called once a revocation has committed."""
    for hook in list(_ON_REVOKED):
        hook()
