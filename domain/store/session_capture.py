"""The artifacts a session's capture check reads and writes: TRACE parts and the RUN_SUMMARY.

complete_agent_session compares the trace-part manifest its caller declares with the TRACE
artifacts stored for the session, and stores a deterministic RUN_SUMMARY in the completion's own
transaction; get_agent_session lists the session's summary and transcript artifacts. Both go
through the artifact store (:mod:`domain.store.artifacts`); this module is the narrow seam the
session tools use:

* :func:`for_session` — the session's live artifacts (one consistent Query of the session's
  link copies, ``artifacts.for_session``); a withdrawn artifact no longer counts as stored;
* :func:`summary_action` — the RUN_SUMMARY's items (``artifacts.put_actions``: head, body, link
  copies under the session and its project), added to the caller's transaction.

A TRACE part is matched by its ``tracePart`` (attach_artifact with ``type: TRACE``,
``sessionId`` and ``tracePart``), falling back to its title.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from domain import ids
from domain.store import artifacts as artifact_store


@dataclass(frozen=True)
class SessionArtifact:
    artifactId: str
    type: str  # TRACE, RUN_SUMMARY, … (the artifact store's kinds)
    name: str  # a TRACE part's manifest name; otherwise the title
    sha256: str | None
    size: int | None
    createdAt: str


def _view(row: Any) -> SessionArtifact:
    return SessionArtifact(
        row.artifactId,
        row.type,
        row.tracePart or row.title,
        row.sha256,
        int(row.size) if row.size is not None else None,
        row.createdAt,
    )


def for_session(workspace_id: str, session_id: str) -> list[SessionArtifact]:
    """The session's live artifacts, oldest first (one Query per MB)."""
    return [_view(r) for r in artifact_store.for_session(workspace_id, session_id) if not r.withdrawnAt]


def summary_body(summary: dict[str, Any]) -> str:
    """The deterministic text of a run summary: canonical JSON (sorted keys, no spaces)."""
    return json.dumps(summary, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def summary_action(
    tx: Any, summary: dict[str, Any], *, body: str, artifact_id: str, actor_id: str, actor_name: str, at: str
) -> SessionArtifact:
    """Add the RUN_SUMMARY of ``summary["sessionId"]`` to ``tx``. ``body`` is :func:`summary_body`
    after redaction (the store never sees a raw secret; the caller redacts, like attach_artifact)."""
    links = {"sessionId": summary["sessionId"], "projectId": summary["projectId"]}
    record = artifact_store.ArtifactRecord(
        artifact_id=artifact_id,
        workspace_id=summary["workspaceId"],
        type="RUN_SUMMARY",
        title=f"Run summary of {summary['sessionId']}",
        storage="INLINE",
        created_by=actor_id,
        created_by_name=actor_name,
        created_at=at,
        body=body,
        size=len(body.encode()),
        links=links,
    )
    return _view(artifact_store.put_actions(tx, record))


def new_summary_id(workspace_id: str) -> str:
    return ids.new_artifact_id(workspace_id)
