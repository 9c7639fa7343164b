"""Independent DynamoDB requests of one call, sent at the same time.

botocore clients are thread-safe, so requests that do not depend on each other (the rate
window, the membership + target BatchGetItem, a header Query, an activity Query) run on a small
shared thread pool and a call waits for one round trip instead of several. The pool is created
on first use, never at import: a Lambda snapshot (SnapStart) or a forked process holds no
threads from its parent. (Under provisioned concurrency, init starts it on purpose:
functions/priming.py.)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
MAX_WORKERS = 16
_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()
_local = threading.local()


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(max_workers=MAX_WORKERS, thread_name_prefix="jentrix-io")
    return _pool


def submit(fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
    """Start ``fn(*args, **kwargs)`` on the I/O pool."""
    issued = time.perf_counter()

    def run() -> T:
        _local.issued = issued
        try:
            return fn(*args, **kwargs)
        finally:
            _local.issued = None

    return _executor().submit(run)


def take_issued() -> float | None:
    """When the caller asked for the work now running on this pool thread (``perf_counter``),
    once: request meters date a pooled request from its submission, not from when a thread
    happened to pick it up, so overlap is judged by causality rather than by scheduling."""
    issued = getattr(_local, "issued", None)
    _local.issued = None
    return issued


def reset_after_fork() -> None:
    """Forget the pool (a forked child must not use its parent's threads)."""
    global _pool
    _pool = None
