"""Independent DynamoDB requests of one call, sent at the same time.

botocore clients are thread-safe, so requests that do not depend on each other (the rate
window, the membership + target BatchGetItem, a header Query, an activity Query) run on a small
shared thread pool and a call waits for one round trip instead of several. The pool is created
on first use, never at import: a Lambda snapshot (SnapStart) or a forked process holds no
threads from its parent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
MAX_WORKERS = 16
_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(max_workers=MAX_WORKERS, thread_name_prefix="jentrix-io")
    return _pool


def submit(fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
    """Start ``fn(*args, **kwargs)`` on the I/O pool."""
    return _executor().submit(fn, *args, **kwargs)


def reset_after_fork() -> None:
    """Forget the pool (a forked child must not use its parent's threads)."""
    global _pool
    _pool = None
