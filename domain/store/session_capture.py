"""The artifacts a session's capture check reads and writes: TRACE parts and the RUN_SUMMARY.

complete_agent_session compares the trace-part manifest its caller declares with the TRACE
artifacts stored for the session, and stores a deterministic RUN_SUMMARY in the completion's own
transaction; get_agent_session lists the session's summary and transcript artifacts. This
module is that whole seam, kept narrow on purpose:

* :func:`for_session` — every artifact linked to the session (one Query);
* :func:`summary_action` — the RUN_SUMMARY put, added to the caller's transaction;
* :func:`put_part` — stores one TRACE part record (the write attach_artifact makes for a trace
  part; until that tool exists it is the only writer, and tests use it).

Items (docs/data-model.md, "Agent sessions"): ``SART#<session> / A#<type>#<name>``, one per
artifact, keyed by name so a part declared twice is stored once. This is a stand-in, defined
additively here, for the artifact store's own session index (``domain/store/artifacts.py``
``for_session`` / ``put_actions`` of the artifacts work): the tools depend only on the three
functions above and :class:`SessionArtifact`, so switching the implementation to that store
changes this module alone.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from domain import clock
from domain.store import keys
from domain.store.models import Row, SessionArtifactRow

SUMMARY_NAME = "run-summary"


@dataclass(frozen=True)
class SessionArtifact:
    artifactId: str
    type: str  # TRACE, RUN_SUMMARY (later: the artifact store's kinds)
    name: str  # a TRACE part's manifest name; "run-summary"
    sha256: str | None
    size: int | None
    createdAt: str


def _view(row: SessionArtifactRow) -> SessionArtifact:
    return SessionArtifact(row.artifactId, row.artifactType, row.name, row.sha256, int(row.size) if row.size is not None else None, row.createdAt)


def for_session(workspace_id: str, session_id: str) -> list[SessionArtifact]:
    """The session's artifacts by type then name (one Query; a session holds at most a few hundred)."""
    pk = keys.session_artifact_partition(session_id)
    rows = SessionArtifactRow.query(pk, Row.SK.startswith(keys.SESSION_ARTIFACTS_PREFIX), consistent_read=True)
    return [_view(r) for r in rows if isinstance(r, SessionArtifactRow) and r.workspaceId == workspace_id]


def summary_id(session_id: str) -> str:
    """The RUN_SUMMARY's id: derived from the session, so a repeated completion rewrites one artifact."""
    return f"rs_{session_id[4:]}"


def summary_body(summary: dict[str, Any]) -> str:
    """The deterministic text of a run summary: canonical JSON (sorted keys, no spaces)."""
    return json.dumps(summary, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def summary_action(tx: Any, workspace_id: str, session_id: str, summary: dict[str, Any], *, actor_id: str, at: str) -> SessionArtifact:
    """Add the RUN_SUMMARY put to ``tx``; the same session state gives the same bytes and id."""
    body = summary_body(summary)
    digest = hashlib.sha256(body.encode()).hexdigest()
    row = SessionArtifactRow(
        *keys.session_artifact(session_id, "RUN_SUMMARY", SUMMARY_NAME), artifactId=summary_id(session_id), workspaceId=workspace_id,
        sessionId=session_id, artifactType="RUN_SUMMARY", name=SUMMARY_NAME, body=body, sha256=digest, size=len(body.encode()),
        createdBy=actor_id, createdAt=at,
    )
    tx.save(row)
    return _view(row)


def put_part(workspace_id: str, session_id: str, name: str, *, actor_id: str, sha256: str | None = None, size: int | None = None) -> SessionArtifact:
    """Store one TRACE part record of the session (idempotent by part name)."""
    at = clock.now_iso()
    row = SessionArtifactRow(
        *keys.session_artifact(session_id, "TRACE", name), artifactId=f"tp_{session_id[4:]}_{hashlib.sha256(name.encode()).hexdigest()[:12]}",
        workspaceId=workspace_id, sessionId=session_id, artifactType="TRACE", name=name, sha256=sha256, size=size, createdBy=actor_id, createdAt=at,
    )
    row.save()
    return _view(row)
