"""Text rules shared by every tool that takes a name or a title."""

from __future__ import annotations

import unicodedata

_INVISIBLE = {"\u115f", "\u1160", "\u2800", "\u3164", "\uffa0"}


def has_visible(text: str | None) -> bool:
    """Whether ``text`` shows anything: not only spaces, controls, format marks (zero-width,
    bidi) or the blank "filler" letters some scripts have."""
    return bool(text) and any(unicodedata.category(ch)[0] not in "ZC" and ch not in _INVISIBLE for ch in text)  # type: ignore[union-attr]
