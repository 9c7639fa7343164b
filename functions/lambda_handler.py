"""AWS Lambda entry: the FastAPI app behind Mangum (``lifespan="off"``).

The app serves ``/api/mcp``; this module turns the path API Gateway hands over into that path.

* REST API (payload v1): ``path`` never carries the stage. Behind a custom domain it starts with
  the base path of the domain's mapping, if the mapping has one.
* HTTP API (payload v2): ``rawPath`` (and ``requestContext.http.path``) start with ``/<stage>``
  only when the request came through the ``execute-api`` hostname on a named stage. A custom
  domain never puts the stage in the path (so a stage called ``api`` must not be stripped from
  ``/api/mcp`` there), but it does put the mapping's base path in.

``JENTRIX_BASE_PATH`` names that base path (``/jentrix``, ``jentrix`` and ``/jentrix/`` are the
same; empty or ``/`` means none). It is removed only as a whole leading segment sequence, and
only from requests that arrived through a custom domain. Clients are created at import (cold
start), never per invocation, and the first request's one-time work is done then too
(:mod:`functions.priming`).
"""

from __future__ import annotations

import asyncio
import os
import random
from typing import Any

from mangum import Mangum

from domain import catalog, observability
from domain.search import install_index_hook
from functions import priming
from functions.http_app import app

install_index_hook()  # done by create_app too; in Lambda no local consumer listens: the stream consumer indexes


class _Mangum(Mangum):
    """Mangum that makes sure the thread has a usable event loop before every invocation."""

    def __call__(self, event: Any, context: Any) -> dict[str, Any]:
        _ensure_event_loop()
        return super().__call__(event, context)


_mangum = _Mangum(app, lifespan="off", api_gateway_base_path="/")


from functions.gateway_paths import _drop_prefix, _is_execute_api_host, normalize_base_path, route_path  # noqa: E402,F401 - shared with the web function

BASE_PATH = normalize_base_path(os.environ.get("JENTRIX_BASE_PATH"))


def _ensure_event_loop() -> None:
    """Mangum runs each invocation on the thread's current event loop and only creates one
    when it is built. Something else in the process may have closed or unset it since (a test
    runner does, after an async test), so make sure one is there before every invocation."""
    try:
        loop = asyncio.get_event_loop()
        if not loop.is_closed():
            return
    except RuntimeError:
        pass
    asyncio.set_event_loop(asyncio.new_event_loop())


# On Lambda, build the tracer (and import the X-Ray SDK) during init rather than in the first
# invocation; elsewhere this is a no-op (domain/observability.py).
observability.TRACING.tracer()
# The first request's one-time work, done now (functions/priming.py); the whole catalog's only
# where init runs ahead of traffic (provisioned concurrency, SnapStart).
PRIMED = priming.prime(
    _mangum,
    validators=catalog.eager_init(),
    connections=os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") == "provisioned-concurrency",
)
# Under SnapStart (the deployed configuration, template.yaml): what each restored environment
# redoes before its first invocation — reseed, reconnect (functions/priming.py, after_restore).
RESTORE_HOOK = priming.register_restore_hooks()
_cold = True


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    global _cold
    if _cold:
        _cold = False
        # The first invocation of an environment — after a SnapStart restore too, since the
        # snapshot holds _cold = True — draws a fresh seed for `random` (retry jitter), so that
        # environments restored from one snapshot do not back off in step. The after-restore
        # hook did so already where the runtime ran it; this covers a restore without it.
        random.seed()
        observability.record_cold_start(str(getattr(context, "function_name", "") or "jentrix-mcp"))
    return _mangum(route_path(event, BASE_PATH), context)
