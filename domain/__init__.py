"""The Jentrix product: tools, business rules, authorization and the single-table store.

Nothing in this package knows about HTTP, JSON-RPC ids or line framing; the transports in
``functions/`` call :mod:`domain.pipeline` and render what it returns.
"""
