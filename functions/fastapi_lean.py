"""Import FastAPI without building the OpenAPI models this app never uses.

``import fastapi`` defines ~60 pydantic models for OpenAPI documents (``fastapi.openapi.models``:
``Contact``, ``Info``, ``Parameter``, …) and builds each one's validator at import; in this
project that was the largest single cost of a cold start (~130-200 ms here; docs/performance.md,
"Cold start"). The app is built with ``openapi_url=None``: no OpenAPI document is ever produced,
so no request uses those validators. :func:`import_fastapi` imports FastAPI once with pydantic's
``defer_build`` default switched on, then switches it back: FastAPI's models are then built by
their first use, if one ever comes (``app.openapi()`` still works, tested), and every model
defined afterwards keeps pydantic's normal default. FastAPI also calls ``model_rebuild()`` on
three self-referencing models (``Schema``, ``Operation``, ``Encoding``) to resolve their forward
references, which builds them (and most of the others through them: ~60 ms here). A deferred
model resolves its references from its module when it is first used, so for the length of the
import those three calls, and only calls on ``fastapi.openapi.models`` classes without
arguments, are skipped; ``BaseModel.model_rebuild`` is the original again afterwards.

pydantic offers no public switch for another package's models (FastAPI's own proposal, an
environment variable, was not merged: fastapi/fastapi#10546), so this sets the default in
``pydantic._internal._config.config_defaults``. Where that is missing or shaped otherwise (a
future pydantic), FastAPI is imported plainly: slower, never wrong. tests/test_priming.py pins
that it takes effect with the installed pydantic and restores the default.
"""

from __future__ import annotations

import importlib
import sys

OPENAPI_MODELS = "fastapi.openapi.models"


def import_fastapi() -> bool:
    """Import ``fastapi`` (once per process); ``True`` if its models were deferred by this call."""
    if "fastapi" in sys.modules:
        return False
    try:
        from pydantic._internal import _config

        defaults = _config.config_defaults
        previous = defaults["defer_build"]
    except (ImportError, AttributeError, KeyError, TypeError):
        importlib.import_module("fastapi")
        return False
    from pydantic import BaseModel

    rebuild = BaseModel.__dict__["model_rebuild"]

    def deferred_rebuild(cls: type[BaseModel], *args: object, **kwargs: object) -> bool | None:
        if cls.__module__ == OPENAPI_MODELS and not args and not kwargs:
            return None  # left to the first use, like every other deferred model
        return rebuild.__func__(cls, *args, **kwargs)

    defaults["defer_build"] = True
    BaseModel.model_rebuild = classmethod(deferred_rebuild)  # type: ignore[method-assign,assignment]
    try:
        importlib.import_module("fastapi")
    finally:
        BaseModel.model_rebuild = rebuild  # type: ignore[method-assign]
        defaults["defer_build"] = previous
    return True
