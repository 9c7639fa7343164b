"""The stdio transport: line framing, connection binding, and the two backends (in-process, bridge).

``functions.stdio_adapter`` is the command-line entry; the pieces live here:

* :mod:`.framing` — bounded line reading and JSON-RPC envelope classification;
* :mod:`.checkout` — verifying a checkout directory and normalising its GitHub remote;
* :mod:`.binding` — how a connection's workspace, checkout and observe flag are decided;
* :mod:`.backends` — where a message is handled: in this process or at a remote endpoint;
* :mod:`.server` — the read loop, the worker pool, the writer and the roots round trips;
* :mod:`.ephemeral` — a throwaway DynamoDB Local with a seeded user, workspace and token.
"""
