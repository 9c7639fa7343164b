"""Every key of the single table, one function per item row of docs/data-model.md ("Items").

This module is the only place where key prefixes (``BOARD#``, ``WS#``, …) and sort-key
literals (``META``, ``#META``, ``PROFILE``, …) are spelled; everything else calls these
functions, so a typo is a failing import or test rather than a silently empty Query.
``tests/test_store_keys.py`` checks each function against the patterns in the data-model doc.

Item functions return ``(PK, SK)``; GSI functions return ``(GSI<n>PK, GSI<n>SK)``; partition
functions return the partition value alone; ``*_PREFIX`` and ``*_RANGE`` constants are the
``begins_with`` / ``BETWEEN`` operands of the documented Queries. Numbers inside sort keys are
zero-padded to 10 digits so that string order is numeric order.
"""

from __future__ import annotations

Key = tuple[str, str]


# -- partitions --------------------------------------------------------------------------------
def user_partition(user_id: str) -> str:
    """``USER#<user>``: a user's profile and membership mirrors; GSI1 partition of their tokens."""
    return f"USER#{user_id}"


def workspace_partition(workspace_id: str) -> str:
    """``WS#<ws>``: the workspace head, members, board entries and task-number pointers."""
    return f"WS#{workspace_id}"


def board_partition(board_id: str) -> str:
    """``BOARD#<board>``: the board head, its columns, labels, compact task rows and full task items."""
    return f"BOARD#{board_id}"


def board_activity_partition(board_id: str) -> str:
    """``BACT#<board>``: the board's activity log, apart from the snapshot's partition."""
    return f"BACT#{board_id}"


def task_activity_partition(task_id: str) -> str:
    """GSI1 ``TACT#<task>``: one task's activity rows."""
    return f"TACT#{task_id}"


def column_order_partition(column_id: str) -> str:
    """GSI1 ``COL#<column>``: a column's compact task rows in board order."""
    return f"COL#{column_id}"


def _n(number: int) -> str:
    return f"{int(number):010d}"


# -- items -------------------------------------------------------------------------------------
def user_profile(user_id: str) -> Key:
    return user_partition(user_id), "PROFILE"


def email_claim(email: str) -> Key:
    """``EMAIL#<lowercased email> / USER``: one email names at most one user."""
    return f"EMAIL#{email.strip().lower()}", "USER"


def membership_mirror(user_id: str, workspace_id: str) -> Key:
    return user_partition(user_id), f"WS#{workspace_id}"


#: the sort key of a workspace head (its partition is :func:`workspace_partition`)
WORKSPACE_HEAD_SORT_KEY = "META"


def workspace_head(workspace_id: str) -> Key:
    return workspace_partition(workspace_id), WORKSPACE_HEAD_SORT_KEY


def member(workspace_id: str, user_id: str) -> Key:
    return workspace_partition(workspace_id), f"MEMBER#{user_id}"


def board_entry(workspace_id: str, board_id: str) -> Key:
    return workspace_partition(workspace_id), f"BOARD#{board_id}"


def task_number(workspace_id: str, number: int) -> Key:
    return workspace_partition(workspace_id), f"TASKNO#{_n(number)}"


def slug_claim(slug: str) -> Key:
    return f"SLUG#{slug}", "SLUG"


def board_head(board_id: str) -> Key:
    return board_partition(board_id), "#META"


def column(board_id: str, column_id: str) -> Key:
    return board_partition(board_id), f"C#{column_id}"


def label(board_id: str, label_id: str) -> Key:
    """``BOARD#<board> / L#<label>``: a board label; sorts after the columns and before the tasks,
    so the snapshot Query returns the board's labels too."""
    return board_partition(board_id), f"L#{label_id}"


def label_name_claim(board_id: str, name: str) -> Key:
    """``LNAME#<board>#<lowercased name> / LNAME``: one label name (case-insensitively) per board.
    Its own partition, like the slug and email claims, so claims never enter a board Query."""
    return f"LNAME#{board_id}#{label_name_key(name)}", "LNAME"


def label_name_key(name: str) -> str:
    """The case-insensitive form two label names are compared in."""
    return name.strip().casefold()


def task_compact(board_id: str, number: int) -> Key:
    return board_partition(board_id), f"T#{_n(number)}"


def task_full(board_id: str, number: int) -> Key:
    return board_partition(board_id), f"X#{_n(number)}"


def task_full_of(pk: str, sk: str) -> tuple[str, int] | None:
    """``(board_id, number)`` when ``(pk, sk)`` is a task's full item (:func:`task_full`), else
    ``None`` (``domain.store.witness`` finds the full items a transaction writes by their keys)."""
    board, number = pk.removeprefix(board_partition("")), sk.removeprefix(TASK_ITEMS_PREFIX)
    if board == pk or number == sk or not number.isdigit():
        return None
    return board, int(number)


def activity(board_id: str, at: str, ulid: str) -> Key:
    return board_activity_partition(board_id), activity_sort_key(at, ulid)


def activity_type_partition(board_id: str, type_: str) -> str:
    """GSI3 ``ACTT#<board>#<type>``: a board's activity rows of one type (list_activity's type filter)."""
    return f"ACTT#{board_id}#{type_}"


def activity_type_index(board_id: str, type_: str, at: str, ulid: str) -> Key:
    """GSI3 of an activity row: its board and type, newest last, like the board log."""
    return activity_type_partition(board_id, type_), activity_sort_key(at, ulid)


def activity_sort_key(at: str, ulid: str) -> str:
    """``<at>#<ulid>``: activity rows sort by time, ties broken by the ULID."""
    return f"{at}#{ulid}"


def task_side_partition(task_id: str) -> str:
    """``TCOM#<task>``: a task's side items, outside the board partition (so they never enter a
    snapshot's pages): the comment counter ``#COUNT``, comments ``CM#…`` (oldest first), link
    edges ``LN#…`` and subtasks ``ST#…``. ``#`` < ``CM#`` < ``LN#`` < ``ST#``, so one Query over
    :data:`SIDECAR_RANGE` returns a task's links and subtasks without its comments."""
    return f"TCOM#{task_id}"


# -- coordination (docs/coordination.md) --------------------------------------------------------
def coordination_partition(task_id: str) -> str:
    """``CO#<task>``: the coordination around one task: its claim head ``CLAIMS`` and its peer
    requests ``RQ#<ulid>`` (one Query answers mj_work_context)."""
    return f"CO#{task_id}"


def claim_head(task_id: str) -> Key:
    """``CO#<task> / CLAIMS``: the live claims on a task, rewritten under its ``revision``."""
    return coordination_partition(task_id), "CLAIMS"


def peer_request(task_id: str, ulid: str) -> Key:
    """``CO#<task> / RQ#<ulid>``: one peer question asked from the task."""
    return coordination_partition(task_id), f"RQ#{ulid}"


REQUEST_PREFIX = "RQ#"


def review(task_id: str, ulid: str) -> Key:
    """``CO#<task> / RV#<ulid>``: one submitted review of artifacts on the task."""
    return coordination_partition(task_id), f"RV#{ulid}"


def helper_link(parent_task_id: str, helper_task_id: str) -> Key:
    """``CO#<parent> / HL#<helper>``: a helper task whose work feeds the parent (mj_link_helper)."""
    return coordination_partition(parent_task_id), f"HL#{helper_task_id}"


HELPER_LINK_PREFIX = "HL#"


def integration(parent_task_id: str, ulid: str) -> Key:
    """``CO#<parent> / IG#<ulid>``: a frozen set of integration inputs and its acceptance."""
    return coordination_partition(parent_task_id), f"IG#{ulid}"


def actor_partition(workspace_id: str, actor_id: str) -> str:
    """``ACTOR#<ws>#<actor>``: an actor's own coordination index (its claims ``CLAIM#<task>``)."""
    return f"ACTOR#{workspace_id}#{actor_id}"


def actor_claim(workspace_id: str, actor_id: str, task_id: str) -> Key:
    return actor_partition(workspace_id, actor_id), f"CLAIM#{task_id}"


ACTOR_CLAIM_PREFIX = "CLAIM#"
#: an inbox is written across this many partitions (by the entry's ULID) and read from all of them at once
INBOX_SHARDS = 4


def inbox_shard(ulid: str) -> int:
    """The shard of an inbox entry: its ULID's random tail, so concurrent senders spread evenly."""
    return int.from_bytes(ulid[-4:].encode(), "big") % INBOX_SHARDS


def inbox_partition(workspace_id: str, actor_id: str, shard: int) -> str:
    """``INBOX#<ws>#<actor>#<shard>``: one of the :data:`INBOX_SHARDS` partitions of an actor's inbox."""
    return f"INBOX#{workspace_id}#{actor_id}#{shard}"


def inbox_entry(workspace_id: str, actor_id: str, ulid: str) -> Key:
    """``INBOX#<ws>#<actor>#<shard> / IN#<ulid>``: one addressed item (newest last in each shard)."""
    return inbox_partition(workspace_id, actor_id, inbox_shard(ulid)), f"IN#{ulid}"


INBOX_PREFIX = "IN#"


def channels_partition(workspace_id: str) -> str:
    """``CHANNELS#<ws>``: one entry per channel of the workspace (mj_channels)."""
    return f"CHANNELS#{workspace_id}"


def channel_entry(workspace_id: str, channel: str) -> Key:
    return channels_partition(workspace_id), f"CH#{channel}"


def channel_partition(workspace_id: str, channel: str) -> str:
    """``CH#<ws>#<channel>``: a channel's messages ``M#<ulid>`` and their promotions ``P#<ulid>#<target>``."""
    return f"CH#{workspace_id}#{channel}"


def channel_message(workspace_id: str, channel: str, ulid: str) -> Key:
    return channel_partition(workspace_id, channel), f"M#{ulid}"


def promotion(workspace_id: str, channel: str, ulid: str, target: str) -> Key:
    return channel_partition(workspace_id, channel), f"P#{ulid}#{target}"


CHANNEL_MESSAGE_PREFIX = "M#"
PROMOTION_PREFIX = "P#"


def decision_partition(workspace_id: str) -> str:
    """``DECISION#<ws>``: the workspace's proposed decisions ``D#<ulid>`` (the ULID of the channel
    message each was promoted from, so a message yields at most one). Written by hand-picked
    promotions only: a quiet partition."""
    return f"DECISION#{workspace_id}"


def decision(workspace_id: str, ulid: str) -> Key:
    return decision_partition(workspace_id), f"D#{ulid}"


def attention_partition(workspace_id: str) -> str:
    """``ATTN#<ws>``: the operators' attention items of a workspace ``A#<ulid>`` (oldest first).
    Written once per prepared consultation or arrived result: low volume, never a hot key."""
    return f"ATTN#{workspace_id}"


def attention(workspace_id: str, ulid: str) -> Key:
    return attention_partition(workspace_id), f"A#{ulid}"


ATTENTION_PREFIX = "A#"


def consultation_partition(workspace_id: str) -> str:
    """``CONSULT#<ws>``: the workspace's prepared consultations ``C#<ulid>`` (mj_consult_queue is one Query)."""
    return f"CONSULT#{workspace_id}"


def consultation(workspace_id: str, ulid: str) -> Key:
    return consultation_partition(workspace_id), f"C#{ulid}"


CONSULTATION_PREFIX = "C#"


def comment(task_id: str, ulid: str) -> Key:
    return task_side_partition(task_id), f"CM#{ulid}"


def comment_count(task_id: str) -> Key:
    return task_side_partition(task_id), "#COUNT"


def subtask(task_id: str, ulid: str) -> Key:
    """``TCOM#<task> / ST#<ulid>``: one checklist item; ULID order is the checklist's order."""
    return task_side_partition(task_id), f"ST#{ulid}"


def attachment(task_id: str, ulid: str) -> Key:
    """``TCOM#<task> / AT#<ulid>``: one file attached to the task; ULID order is upload order.
    ``#`` < ``AT#`` < ``CM#``, and ``AT#`` lies outside :data:`SIDECAR_RANGE`."""
    return task_side_partition(task_id), f"{ATTACHMENTS_PREFIX}{ulid}"


def attachment_count(task_id: str) -> Key:
    """``TCOM#<task> / #ATTACH``: how many files the task has (list_attachments' totalCount)."""
    return task_side_partition(task_id), "#ATTACH"


def task_recent_activity(task_id: str) -> Key:
    """``TCOM#<task> / RECENT``: the task's newest activity entries, a copy of its GSI1 log kept
    in every transaction that writes an entry (:mod:`domain.store.activity`). ``LN#`` <
    ``RECENT`` < ``ST#``, so the one Query over :data:`SIDECAR_RANGE` a detailed get_task makes
    returns it with the links and subtasks."""
    return task_side_partition(task_id), "RECENT"


ATTACHMENTS_PREFIX = "AT#"
COMMENTS_PREFIX = "CM#"
SUBTASKS_PREFIX = "ST#"
SIDECAR_RANGE = ("LN#", "ST#~")  # a task's link edges and subtasks (get_task detailed)


def link_out(from_task_id: str, kind: str, to_task_id: str) -> Key:
    """The outgoing half of an edge, on the source: ``TCOM#<from> / LN#<kind>#OUT#<to>``."""
    return task_side_partition(from_task_id), f"{LINKS_PREFIX}{kind}#OUT#{to_task_id}"


def link_in(to_task_id: str, kind: str, from_task_id: str) -> Key:
    """The incoming half of an edge, on the target: ``TCOM#<to> / LN#<kind>#IN#<from>``."""
    return task_side_partition(to_task_id), f"{LINKS_PREFIX}{kind}#IN#{from_task_id}"


def link_count(task_id: str) -> Key:
    """``TCOM#<task> / #LINKS``: how many edge halves the task holds (``#COUNT`` < ``#LINKS`` < ``CM#``)."""
    return task_side_partition(task_id), "#LINKS"


def link_graph(workspace_id: str) -> Key:
    """``WS#<ws> / LINKGRAPH``: the version every BLOCKS/DEPENDS_ON insert of the workspace advances."""
    return workspace_partition(workspace_id), "LINKGRAPH"


LINKS_PREFIX = "LN#"
# A task's dependency successors (the tasks it must finish before): its outgoing BLOCKS edges
# and its incoming DEPENDS_ON edges, adjacent because the kind precedes the direction.
DEPENDENCY_RANGE = (f"{LINKS_PREFIX}BLOCKS#OUT#", f"{LINKS_PREFIX}DEPENDS_ON#IN#~")


def invitation(workspace_id: str, ulid: str) -> Key:
    """``WS#<ws> / INVITE#<ulid>``: one invitation (pending, accepted, revoked); oldest first."""
    return workspace_partition(workspace_id), f"{INVITATIONS_PREFIX}{ulid}"


INVITATIONS_PREFIX = "INVITE#"


def governance_policy(workspace_id: str) -> Key:
    """``WS#<ws> / GOVERNANCE``: the workspace's governance policy per governed pack (absent = defaults)."""
    return workspace_partition(workspace_id), "GOVERNANCE"


def approval(workspace_id: str, request: str, ulid: str) -> Key:
    """``WS#<ws> / APPROVAL#<request>#<ulid>``: one approval request; ``request`` is the first 16
    hex digits of the digest of (tool, arguments, caller), so one Query over
    :func:`approvals_of_request` finds every round of the same call."""
    return workspace_partition(workspace_id), f"{APPROVALS_PREFIX}{request}#{ulid}"


def approvals_of_request(request: str) -> str:
    return f"{APPROVALS_PREFIX}{request}#"


APPROVALS_PREFIX = "APPROVAL#"


def workspace_log_partition(workspace_id: str) -> str:
    """``WSLOG#<ws>``: the workspace-level log (membership changes, invitations, approvals)."""
    return f"WSLOG#{workspace_id}"


def workspace_log(workspace_id: str, at: str, ulid: str) -> Key:
    return workspace_log_partition(workspace_id), activity_sort_key(at, ulid)


def token(secret_digest: str) -> Key:
    return f"TOKEN#{secret_digest}", "TOKEN"


# -- OAuth (docs/oauth.md, "Rows"): every secret is keyed by its SHA-256, never stored itself --
def oauth_access(secret_digest: str) -> Key:
    """An OAuth access token (``tmo_``), by digest: the one GetItem of a call's token check."""
    return f"OAT#{secret_digest}", "OAT"


def oauth_refresh(secret_digest: str) -> Key:
    return f"ORT#{secret_digest}", "ORT"


def oauth_code(secret_digest: str) -> Key:
    return f"OAC#{secret_digest}", "OAC"


def oauth_grant(user_id: str, grant_id: str) -> Key:
    """A grant lives in its user's partition, so "connected apps" is one Query."""
    return user_partition(user_id), f"{OAUTH_GRANTS_PREFIX}{grant_id}"


OAUTH_GRANTS_PREFIX = "OAG#"


def oauth_client(client_id: str) -> Key:
    """A dynamically registered client (RFC 7591)."""
    return f"OCL#{client_id}", "OCL"


def oauth_client_document(url_digest: str) -> Key:
    """The cached copy of a client ID metadata document, by the SHA-256 of its URL."""
    return f"OCM#{url_digest}", "OCM"


def signin_link(secret_digest: str) -> Key:
    return f"OSL#{secret_digest}", "OSL"


def web_session(secret_digest: str) -> Key:
    return f"OSS#{secret_digest}", "OSS"


def oidc_state(state_digest: str) -> Key:
    return f"OST#{state_digest}", "OST"


def rate_window(token_id: str, window_start_ms: int) -> Key:
    return f"RATE#{token_id}#{window_start_ms}", "RATE"


RATE_WINDOW_PREFIX = "RATE#"


def creation_marker(marker_digest: str) -> Key:
    return f"IDEM#{marker_digest}", "IDEM"


def bulk_chunk_marker(marker_digest: str, chunk: int) -> Key:
    """``IDEM#<digest> / CHUNK#<chunk:03>``: one per committed transaction of a keyed
    bulk_update_tasks/bulk_move_tasks call, beside the key's creation marker partition."""
    return f"IDEM#{marker_digest}", f"CHUNK#{int(chunk):03d}"


def project(workspace_id: str, project_id: str) -> Key:
    """``WS#<ws> / PROJECT#<project>``: a project head, in its workspace's partition (list_projects
    is one Query ``begins_with PROJECT#``)."""
    return workspace_partition(workspace_id), f"{PROJECTS_PREFIX}{project_id}"


def project_slug_claim(workspace_id: str, slug: str) -> Key:
    """``PSLUG#<ws>#<slug> / PSLUG``: one project slug per workspace (``attribute_not_exists``)."""
    return f"PSLUG#{workspace_id}#{slug}", "PSLUG"


def project_link_partition(project_id: str) -> str:
    """``PROJ#<project>``: a project's link edges (get_project lists them with one Query)."""
    return f"PROJ#{project_id}"


def project_link(project_id: str, target_type: str, target_id: str) -> Key:
    """``PROJ#<project> / PL#<type>#<target>``: one project link (a REPO target is ``owner/name``)."""
    return project_link_partition(project_id), f"{PROJECT_LINKS_PREFIX}{target_type}#{target_id}"


PROJECTS_PREFIX = "PROJECT#"
PROJECT_LINKS_PREFIX = "PL#"


# -- uploads and artifacts (docs/data-model.md, "Uploads and artifacts") -------------------------
def upload_grant(grant_id: str) -> Key:
    """``UPLOAD#<grant> / GRANT``: one single-use, expiring upload grant (its own partition)."""
    return f"UPLOAD#{grant_id}", "GRANT"


def artifact_partition(workspace_id: str) -> str:
    """``ART#<ws>``: the workspace's artifact heads ``A#<ulid>`` (creation order) and text bodies ``B#<ulid>``."""
    return f"ART#{workspace_id}"


def artifact(workspace_id: str, ulid: str) -> Key:
    """``ART#<ws> / A#<ulid>``: an artifact's head (everything but the text body)."""
    return artifact_partition(workspace_id), f"{ARTIFACTS_PREFIX}{ulid}"


def artifact_body(workspace_id: str, ulid: str) -> Key:
    """``ART#<ws> / B#<ulid>``: an artifact's redacted text body (absent for object/URL artifacts)."""
    return artifact_partition(workspace_id), f"{ARTIFACT_BODIES_PREFIX}{ulid}"


def artifact_link_partition(workspace_id: str, link: str, linked_id: str) -> str:
    """``ARTL#<ws>#<link>#<linked id>``: copies of the heads of the artifacts linked to one task,
    project, session, run, decision or work order (list_artifacts by link, for_session: one
    Query). The workspace is in the key because run/decision/work-order ids are the caller's."""
    return f"ARTL#{workspace_id}#{link}#{linked_id}"


def artifact_link(workspace_id: str, link: str, linked_id: str, ulid: str) -> Key:
    return artifact_link_partition(workspace_id, link, linked_id), f"{ARTIFACTS_PREFIX}{ulid}"


ARTIFACTS_PREFIX = "A#"
ARTIFACT_BODIES_PREFIX = "B#"


# -- agent sessions (docs/data-model.md, "Agent sessions") ---------------------------------------
def session_partition(workspace_id: str) -> str:
    """``SESS#<ws>``: the workspace's agent session heads (list_agent_sessions is one Query)."""
    return f"SESS#{workspace_id}"


def session(workspace_id: str, ulid: str) -> Key:
    """``SESS#<ws> / S#<ulid>``: one agent session head; ULID order is creation order."""
    return session_partition(workspace_id), f"{SESSIONS_PREFIX}{ulid}"


def session_side_partition(session_id: str) -> str:
    """``SESSION#<session>``: one session's alignment intervals (get_agent_session reads them with one Query)."""
    return f"SESSION#{session_id}"


def session_alignment(session_id: str, ordinal: int) -> Key:
    """``SESSION#<session> / AL#<ordinal:04>``: one task-alignment interval, in alignment order."""
    return session_side_partition(session_id), f"{SESSION_ALIGNMENTS_PREFIX}{int(ordinal):04d}"


def session_binding_claim(provider: str, thread_id: str) -> Key:
    """``SBIND#<provider>#<thread> / SBIND``: which session a provider thread is bound to. Written
    with a condition in the binding transaction, so one thread has at most one open session."""
    return f"SBIND#{provider}#{thread_id}", "SBIND"


SESSIONS_PREFIX = "S#"
SESSION_ALIGNMENTS_PREFIX = "AL#"


# -- GSI1 --------------------------------------------------------------------------------------
def column_order(column_id: str, rank: str, number: int) -> Key:
    """GSI1 of a compact task row: ``COL#<column> / <rank>#<number:010>``."""
    return column_order_partition(column_id), column_order_sort_key(rank, number)


def column_order_sort_key(rank: str, number: int) -> str:
    return f"{rank}#{_n(number)}"


def task_activity(task_id: str, at: str, ulid: str) -> Key:
    """GSI1 of an activity row that concerns a task."""
    return task_activity_partition(task_id), activity_sort_key(at, ulid)


def user_token(user_id: str, token_id: str) -> Key:
    """GSI1 of a token: ``USER#<user> / TOKEN#<tokenId>``."""
    return user_partition(user_id), f"TOKEN#{token_id}"


WORK_ITEM_PREFIXES = ("TWORK#", "USER#")  # a work item's PK and SK prefixes (cursor shapes)


def work_item(task_id: str, user_id: str) -> Key:
    """``TWORK#<task> / USER#<user>``: one assignment's work-index entry (its own partition per task)."""
    return f"TWORK#{task_id}", f"USER#{user_id}"


# -- GSI3 --------------------------------------------------------------------------------------
PRIORITY_RANK = {"URGENT": "0", "HIGH": "1", "MEDIUM": "2", "LOW": "3", "NONE": "4"}
NO_DUE = "~"  # sorts after every date


def work_partition(workspace_id: str, user_id: str) -> str:
    """GSI3 ``MYWORK#<ws>#<user>``: a member's assignments in one workspace."""
    return f"MYWORK#{workspace_id}#{user_id}"


def work_sort_key(due: str | None, priority: str, task_id: str) -> str:
    """GSI3 sort key ``<due or ~>#<priority rank>#<task>``: due date first, then priority (URGENT first)."""
    return f"{due or NO_DUE}#{PRIORITY_RANK.get(priority, '4')}#{task_id}"


def work_index(workspace_id: str, user_id: str, due: str | None, priority: str, task_id: str) -> Key:
    """GSI3 of a work item."""
    return work_partition(workspace_id, user_id), work_sort_key(due, priority, task_id)


# -- GSI2 --------------------------------------------------------------------------------------
def repo_partition(repo: str) -> str:
    """GSI2 ``REPO#<owner/name>``: every REPO project link and every workspace ``defaultRepo`` of one repository."""
    return f"REPO#{repo}"


def repo_link_index(repo: str, workspace_id: str, project_id: str) -> Key:
    """GSI2 of a REPO project link: ``REPO#<owner/name> / LINK#<ws>#<project>``."""
    return repo_partition(repo), f"LINK#{workspace_id}#{project_id}"


def repo_default_index(repo: str, workspace_id: str) -> Key:
    """GSI2 of a workspace head with ``defaultRepo``: ``REPO#<owner/name> / DEFAULT#<ws>``."""
    return repo_partition(repo), f"DEFAULT#{workspace_id}"


# -- Query operands ----------------------------------------------------------------------------
MEMBERS_PREFIX = "MEMBER#"
BOARD_ENTRIES_PREFIX = "BOARD#"
MEMBERSHIPS_PREFIX = "WS#"
TOKENS_PREFIX = "TOKEN#"
TASK_ROWS_PREFIX = "T#"
TASK_ITEMS_PREFIX = "X#"
LABELS_PREFIX = "L#"
# Sort-key order in a board partition: "#META" < "C#…" < "L#…" < "T#…" < "X#…".
HEADER_RANGE = ("#", "C#~")  # the head and every column
LABELED_HEADER_RANGE = ("#", "L#~")  # the head, every column and every label
SNAPSHOT_RANGE = ("#", "T#~")  # the head, the columns, the labels and the compact task rows (no full items)


# An activity sort key strictly after every entry stamped at ``at``.
def activity_after(at: str) -> str:
    return f"{at}#~"


def task_number_of_sort_key(sort_key: str) -> int:
    """The number inside a ``T#``/``X#``/``TASKNO#`` sort key."""
    return int(sort_key.rsplit("#", 1)[1])


# -- search index (domain/search, docs/search.md) ------------------------------------------------
#: corpora of the index: each has its own partitions, so one corpus's postings never answer the
#: other's queries (search_tasks: tasks and comments; search_artifacts: artifact text bodies)
SEARCH_TASKS = ""
SEARCH_ARTIFACTS = "A"


def search_doc_task(task_id: str) -> str:
    """Search doc id of a task's title and description."""
    return f"D#{task_id}"


def search_doc_comment(task_id: str, comment_id: str) -> str:
    """Search doc id of one comment (its own postings: an edit re-indexes only this comment)."""
    return f"C#{task_id}#{comment_id}"


def search_doc_artifact(artifact_id: str) -> str:
    """Search doc id of an artifact's title and redacted text body (corpus :data:`SEARCH_ARTIFACTS`)."""
    return f"A#{artifact_id}"


def search_corpus_of(doc: str) -> str:
    """The corpus a search doc id belongs to."""
    return SEARCH_ARTIFACTS if doc.startswith("A#") else SEARCH_TASKS


def search_term_posting(workspace_id: str, term: str, doc: str, corpus: str = SEARCH_TASKS) -> Key:
    """``W#<ws>#T#<term> / <doc>`` (artifacts: ``W#<ws>#AT#<term>``): one word posting (tf,
    weighted tf, positions, version)."""
    return f"W#{workspace_id}#{corpus}T#{term}", doc


def search_term_by_impact(
    workspace_id: str, term: str, doc: str, inverted_impact: int, corpus: str = SEARCH_TASKS
) -> Key:
    """GSI2 keys of a word posting: ``W#<ws>#T#<term> / <99999 - impact x 10,000, 5 digits>#<doc>``,
    the term's list best first (docs/search.md, "Query plan")."""
    return search_term_posting(workspace_id, term, doc, corpus)[0], f"{inverted_impact:05d}#{doc}"


def search_board_docs(board_id: str) -> tuple[str, str]:
    """The sort-key prefixes of one board's docs in a word-posting partition (task docs, comment
    docs): a task id starts with its board's, so each is one contiguous range."""
    tasks = f"tk_{board_id[3:]}_"
    return search_doc_task(tasks), f"C#{tasks}"


def search_gram_posting(workspace_id: str, gram: str, word: str, corpus: str = SEARCH_TASKS) -> Key:
    """``W#<ws>#G#<trigram> / <word>`` (artifacts: ``W#<ws>#AG#<trigram>``): the corpus's
    substring vocabulary (a word holding the trigram; no attributes). The earlier layout kept
    ``<doc>`` here; the indexer deletes those."""
    return f"W#{workspace_id}#{corpus}G#{gram}", word


def search_vocabulary_partition(workspace_id: str, corpus: str = SEARCH_TASKS) -> str:
    """``W#<ws>#V`` (artifacts: ``W#<ws>#AV``): the corpus's vocabulary words, one item each, so the
    trigram partitions a word fills can be found again (workspace deletion: a trigram partition
    is not reachable by a workspace prefix)."""
    return f"W#{workspace_id}#{corpus}V"


def search_vocabulary_word(workspace_id: str, word: str, corpus: str = SEARCH_TASKS) -> Key:
    """``W#<ws>#V / <word>``: the word is in the corpus's substring vocabulary and all its trigram
    postings are written (the indexer puts it after them; the word's sentinel)."""
    return search_vocabulary_partition(workspace_id, corpus), word


def word_trigrams(word: str) -> list[str]:
    """The three-character windows of one vocabulary word, distinct, in order: the trigram
    partitions the word is posted in (``domain.search.text.word_trigrams`` is this function)."""
    return list(dict.fromkeys(word[i : i + 3] for i in range(len(word) - 2)))


def search_word_grams(workspace_id: str, word: str, corpus: str = SEARCH_TASKS) -> list[Key]:
    """The trigram postings one vocabulary word owns: one per :func:`word_trigrams` window, in order."""
    return [search_gram_posting(workspace_id, g, word, corpus) for g in word_trigrams(word)]


def search_removed_doc(workspace_id: str, doc: str) -> Key:
    """``W#<ws>#RM / <doc>``: a deleted comment's doc left a tombstone state (:func:`search_doc_state`)
    and no entity leads to it any more; this lists it, so deleting the workspace finds the state.
    (Archived tasks and withdrawn artifacts keep their entities, which lead to their states.)"""
    return f"W#{workspace_id}#RM", doc


def search_pending(workspace_id: str, doc: str) -> Key:
    """``W#<ws>#IXQ / <doc>`` (artifacts: ``W#<ws>#AIXQ``): a pending-index marker carrying the
    doc's text and version, written in the entity's transaction; deleted once the postings are
    written."""
    return search_pending_partition(workspace_id, search_corpus_of(doc)), doc


#: sort-key prefix of a batch pending record (one bulk transaction's docs) in the pending
#: partition; doc records use the doc id (``D#``, ``C#``, ``A#``), which never starts with it
SEARCH_BATCH_PREFIX = "B#"


def search_pending_partition(workspace_id: str, corpus: str = SEARCH_TASKS) -> str:
    return f"W#{workspace_id}#{corpus}IXQ"


def search_doc_state(workspace_id: str, doc: str) -> Key:
    """``IXD#<ws>#<doc> / IXD``: what the index holds for one doc (terms, version), so a
    re-index writes only the postings that changed."""
    return f"IXD#{workspace_id}#{doc}", "IXD"


def search_doc_task_id(doc: str) -> str:
    """The owner of a doc: the task of a task doc (``D#<taskId>``) or comment doc
    (``C#<taskId>#<commentId>``), the artifact of an artifact doc (``A#<artifactId>``)."""
    return doc.split("#")[1]


def search_doc_is_comment(doc: str) -> bool:
    """Whether a search doc id names a comment (else a task's title and description)."""
    return doc.startswith("C#")


def search_pending_workspace(pk: str) -> str:
    """The workspace of a pending-marker partition (inverse of :func:`search_pending_partition`)."""
    suffix = f"#{SEARCH_ARTIFACTS}IXQ" if pk.endswith(f"#{SEARCH_ARTIFACTS}IXQ") else "#IXQ"
    return pk[len("W#") : -len(suffix)]
