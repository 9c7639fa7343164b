"""Facts a warm process may reuse for a bounded time (issue 25; docs/decisions.md, "Warm facts").

Each cache holds what one consistent read returned, for at most ``JENTRIX_TOKEN_CACHE_SECONDS``
(the token cache's bound, 5 s by default; 0 turns every cache off, as the test session does).
Only read tools use them: a write reads its facts fresh and its transaction checks them again.
A write in this process forgets the facts it changes at once; other warm processes see a change
within the bound. The bounds per fact are listed in docs/data-model.md, "Warm facts".
"""

from __future__ import annotations

import threading
import time
from collections.abc import Hashable
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from domain.store.models import ColumnRow, MemberRow

V = TypeVar("V")
MAX_ENTRIES = 10_000  # per cache; past it, expired entries go, then the whole cache


class TtlCache(Generic[V]):
    """A thread-safe map whose entries live ``settings.token_cache_seconds`` (monotonic time)."""

    def __init__(self) -> None:
        self._entries: dict[Hashable, tuple[float, V]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _ttl() -> float:
        from domain.settings import settings

        return float(settings.token_cache_seconds)

    def get(self, key: Hashable) -> V | None:
        if self._ttl() <= 0:
            return None
        with self._lock:
            hit = self._entries.get(key)
        if hit is None or hit[0] <= time.monotonic():
            return None
        return hit[1]

    def put(self, key: Hashable, value: V) -> None:
        ttl = self._ttl()
        if ttl <= 0:
            return
        now = time.monotonic()
        with self._lock:
            if len(self._entries) >= MAX_ENTRIES:
                self._entries = {k: v for k, v in self._entries.items() if v[0] > now}
                if len(self._entries) >= MAX_ENTRIES:
                    self._entries.clear()
            self._entries[key] = (now + ttl, value)

    def forget(self, key: Hashable) -> None:
        with self._lock:
            self._entries.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


MEMBERS: TtlCache[MemberRow] = TtlCache()  # (workspaceId, userId) -> MemberRow
COLUMNS: TtlCache[list[ColumnRow]] = TtlCache()  # boardId -> list[ColumnRow] (get_task's column names)
