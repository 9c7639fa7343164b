"""Independent DynamoDB requests of one call, sent at the same time.

botocore clients are thread-safe, so requests that do not depend on each other (the rate
window, the membership + target BatchGetItem, a header Query, an activity Query) run on a small
shared thread pool and a call waits for one round trip instead of several. The pool is created
on first use, never at import: a Lambda snapshot (SnapStart) or a forked process holds no
threads from its parent. (Under provisioned concurrency, init starts it on purpose:
functions/priming.py.)
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from domain.store import deadline

T = TypeVar("T")
MAX_WORKERS = 16
_local = threading.local()


class LazyPool:
    """A thread pool created by its first use, never at import (a SnapStart snapshot or a forked
    child holds no threads from its parent), and forgotten in a forked child."""

    def __init__(self, workers: int, prefix: str) -> None:
        self.workers, self.prefix = workers, prefix
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        os.register_at_fork(after_in_child=self.forget)

    def get(self) -> ThreadPoolExecutor:
        pool = self._pool
        if pool is None:
            with self._lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix=self.prefix)
                pool = self._pool
        return pool

    def forget(self) -> None:
        self._pool = None


_POOL = LazyPool(MAX_WORKERS, "jentrix-io")


def submit(fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
    """Start ``fn(*args, **kwargs)`` on the I/O pool, under the caller's call deadline
    (:mod:`domain.store.deadline`): its requests stop when the call's time is up."""
    issued = time.perf_counter()
    at = deadline.current()

    def run() -> T:
        _local.issued = issued
        try:
            with deadline.adopt(at):
                return fn(*args, **kwargs)
        finally:
            _local.issued = None

    return _POOL.get().submit(run)


def take_issued() -> float | None:
    """When the caller asked for the work now running on this pool thread (``perf_counter``),
    once: request meters date a pooled request from its submission, not from when a thread
    happened to pick it up, so overlap is judged by causality rather than by scheduling."""
    issued = getattr(_local, "issued", None)
    _local.issued = None
    return issued
