"""SQLite schema of a run store at its latest version: the six EvoTrace object types (seed 001,
Appendix A.1), the search state needed to resume, an event log, and the tables of the run's
own side data (guidance, co-evolved system prompts, trace edit labels). A store written by an
older version is brought here by ``migrations.py``; every table of a run lives in this file."""

from __future__ import annotations

DDL = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- Runs: task, framework, model configuration, evaluator, seed, budget, environment.
CREATE TABLE IF NOT EXISTS runs (
    id            TEXT PRIMARY KEY,
    created_at    REAL NOT NULL,
    task_name     TEXT NOT NULL,
    task_dir      TEXT NOT NULL,
    direction     TEXT NOT NULL,
    language      TEXT NOT NULL,
    config_json   TEXT NOT NULL,
    seed          INTEGER NOT NULL,
    code_version  TEXT NOT NULL,
    framework     TEXT NOT NULL DEFAULT 'cambrian'
);

-- Candidates: every proposed program, including failed and rejected ones.
-- status: pending | correct | incorrect | screened | patch_failed | rejected | duplicate
-- (screened: stopped at a tiered evaluation's quick stage, so no full-set score)
CREATE TABLE IF NOT EXISTS candidates (
    id            INTEGER PRIMARY KEY,
    generation    INTEGER NOT NULL,
    island        INTEGER,
    parent_id     INTEGER REFERENCES candidates(id),
    operator      TEXT NOT NULL,
    status        TEXT NOT NULL,
    source        TEXT,
    source_hash   TEXT,
    language      TEXT NOT NULL,
    description   TEXT NOT NULL DEFAULT '',
    model         TEXT,
    context_id    INTEGER REFERENCES contexts(id),
    score         REAL,
    error         TEXT NOT NULL DEFAULT '',
    notes_json    TEXT NOT NULL DEFAULT '{}',
    created_at    REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_candidates_status ON candidates(status);
CREATE INDEX IF NOT EXISTS idx_candidates_hash ON candidates(source_hash);
CREATE INDEX IF NOT EXISTS idx_candidates_parent ON candidates(parent_id);

-- Evaluations: one row per evaluation stage of a candidate.
CREATE TABLE IF NOT EXISTS evaluations (
    id             INTEGER PRIMARY KEY,
    candidate_id   INTEGER NOT NULL REFERENCES candidates(id),
    stage          TEXT NOT NULL,
    status         TEXT NOT NULL,
    combined_score REAL,
    public_json    TEXT NOT NULL,
    private_json   TEXT NOT NULL,
    text_feedback  TEXT NOT NULL,
    error          TEXT NOT NULL,
    stdout         TEXT NOT NULL,
    stderr         TEXT NOT NULL,
    duration_s     REAL NOT NULL,
    extra_json     TEXT NOT NULL,
    created_at     REAL NOT NULL,
    -- where it ran: "local", or the executor's worker/node name
    worker         TEXT NOT NULL DEFAULT 'local'
);
CREATE INDEX IF NOT EXISTS idx_evaluations_candidate ON evaluations(candidate_id);

-- Edges: parent -> child and inspiration -> child, with the operator that made the child.
CREATE TABLE IF NOT EXISTS edges (
    parent_id  INTEGER NOT NULL REFERENCES candidates(id),
    child_id   INTEGER NOT NULL REFERENCES candidates(id),
    kind       TEXT NOT NULL,
    operator   TEXT NOT NULL,
    PRIMARY KEY (parent_id, child_id, kind)
);
CREATE INDEX IF NOT EXISTS idx_edges_child ON edges(child_id);

-- Contexts: every LLM call, byte-identical messages and response.
CREATE TABLE IF NOT EXISTS contexts (
    id                INTEGER PRIMARY KEY,
    purpose           TEXT NOT NULL,
    model             TEXT NOT NULL,
    provider          TEXT NOT NULL,
    params_json       TEXT NOT NULL,
    messages_json     TEXT NOT NULL,
    response_text     TEXT,
    finish_reason     TEXT,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cached_tokens     INTEGER NOT NULL DEFAULT 0,
    cost_usd          REAL NOT NULL DEFAULT 0,
    latency_s         REAL NOT NULL DEFAULT 0,
    error             TEXT NOT NULL DEFAULT '',
    -- characters of the reply beyond the stored cap (llm.max_reply_chars), 0 when whole
    response_dropped_chars INTEGER NOT NULL DEFAULT 0,
    parent_context_id INTEGER REFERENCES contexts(id),
    created_at        REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_contexts_model ON contexts(model);

-- Replay environments: what is needed to re-run a candidate against its evaluator.
CREATE TABLE IF NOT EXISTS environments (
    id            INTEGER PRIMARY KEY,
    evaluator     TEXT NOT NULL,
    contract      TEXT NOT NULL,
    command       TEXT NOT NULL,
    limits_json   TEXT NOT NULL,
    toolchain_json TEXT NOT NULL,
    file_hashes_json TEXT NOT NULL,
    created_at    REAL NOT NULL
);

-- Embeddings of the mutable code, for novelty rejection (float32 unit vectors).
CREATE TABLE IF NOT EXISTS embeddings (
    candidate_id  INTEGER PRIMARY KEY REFERENCES candidates(id),
    model         TEXT NOT NULL,
    vector        BLOB NOT NULL
);

-- Meta-scratchpad updates (seed 000 §3.3): what the run learned, and the recommendations
-- given to later mutation prompts.
CREATE TABLE IF NOT EXISTS meta_notes (
    id                   INTEGER PRIMARY KEY,
    evaluated            INTEGER NOT NULL,
    scratchpad           TEXT NOT NULL,
    recommendations_json TEXT NOT NULL,
    context_id           INTEGER REFERENCES contexts(id),
    created_at           REAL NOT NULL
);

-- Search state that cannot be derived from the history (engine RNG, a selector's own state) as
-- JSON values. Selectors rebuild archives by replaying the evaluations; `archive_snapshot` is a
-- copy of the archive's membership for inspection, checked against the replay on resume.
CREATE TABLE IF NOT EXISTS search_state (
    key    TEXT PRIMARY KEY,
    value  TEXT NOT NULL
);

-- Events (cambrian/core/events.py: one dataclass per kind): sessions, proposals,
-- evaluations, migrations, tune steps, guidance and control changes.
CREATE TABLE IF NOT EXISTS events (
    id          INTEGER PRIMARY KEY,
    kind        TEXT NOT NULL,
    payload_json TEXT NOT NULL,
    created_at  REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_events_kind ON events(kind);
"""


# Tables added by schema 2 (created by migration 2 in older stores).
SIDE_TABLES_DDL = """
-- Human guidance (cambrian/meta/guidance.py): every change, with the text then active.
CREATE TABLE IF NOT EXISTS guidance (
    id INTEGER PRIMARY KEY,
    created_at REAL NOT NULL,
    action TEXT NOT NULL,
    source TEXT NOT NULL,
    text TEXT NOT NULL,
    active_text TEXT NOT NULL,
    restores_id INTEGER,
    target TEXT NOT NULL DEFAULT ''
);

-- Co-evolved system prompts (cambrian/meta/prompt_archive.py, seed 002 section 10.8).
CREATE TABLE IF NOT EXISTS system_prompts (
    id INTEGER PRIMARY KEY,
    parent_id INTEGER,
    text TEXT NOT NULL,
    created_at REAL NOT NULL,
    evaluated INTEGER NOT NULL DEFAULT 0,
    context_id INTEGER,
    retired INTEGER NOT NULL DEFAULT 0
);

-- Edit labels of the trace taxonomy judge, keyed by (judge model, rubric, diff hash).
CREATE TABLE IF NOT EXISTS trace_edit_labels (
    judge        TEXT NOT NULL,
    rubric       TEXT NOT NULL,
    diff_sha256  TEXT NOT NULL,
    labels_json  TEXT NOT NULL,
    rationale    TEXT NOT NULL,
    created_at   REAL NOT NULL,
    PRIMARY KEY (judge, rubric, diff_sha256)
);

-- Requests to a running search from outside its process (the web UI, `cambrian stop`): taken
-- in order by the run, each marked with the time it was applied.
CREATE TABLE IF NOT EXISTS control_requests (
    id INTEGER PRIMARY KEY,
    action TEXT NOT NULL,
    payload_json TEXT NOT NULL,
    source TEXT NOT NULL,
    created_at REAL NOT NULL,
    applied_at REAL
);
"""

# Tables added by schema 3 (created by migration 3 in older stores).
PROGRAM_FILES_DDL = """
-- The files of programs of several files (cambrian/task/program_files.py): each text once,
-- keyed by its SHA-256; a candidate is a manifest of path -> text. A one-file program stays in
-- candidates.source; a program of several files has no candidates.source, and its source_hash
-- is the hash of its bundle text.
CREATE TABLE IF NOT EXISTS blobs (
    sha256 TEXT PRIMARY KEY,
    text   TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS candidate_files (
    candidate_id INTEGER NOT NULL REFERENCES candidates(id),
    position     INTEGER NOT NULL,
    path         TEXT NOT NULL,
    sha256       TEXT NOT NULL REFERENCES blobs(sha256),
    PRIMARY KEY (candidate_id, position)
);
"""

# Tables and indexes added by schema 4 (created by migration 4 in older stores).
RESUME_DDL = """
-- The loop's in-memory search state (the selector's archive, the best fitness) as it stood
-- after the evaluation `evaluations_through` (cambrian/search/resume_snapshot.py): a resume
-- loads it and replays only the evaluations committed after it, instead of every one. One
-- row; `header_json` says what it covers and how it was made, `payload` is the state itself.
-- It is derived data: a missing, stale or damaged one only means a resume replays everything.
CREATE TABLE IF NOT EXISTS resume_snapshot (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    header_json TEXT NOT NULL,
    payload     BLOB NOT NULL,
    created_at  REAL NOT NULL
);
-- The newest generation and the best score without reading every candidate (a session's
-- start and end, the stoppers' restore).
CREATE INDEX IF NOT EXISTS idx_candidates_generation ON candidates(generation);
CREATE INDEX IF NOT EXISTS idx_candidates_status_score ON candidates(status, score);
-- The children made with a mutation intent, which the mutation schedule replays on resume.
CREATE INDEX IF NOT EXISTS idx_candidates_intent ON candidates(json_extract(notes_json, '$.intent'));
"""

# The programs embedded with a model, counted and read from a candidate id on without reading
# their vectors (the novelty index's files are checked against the count on resume).
EMBEDDINGS_INDEX_DDL = """
CREATE INDEX IF NOT EXISTS idx_embeddings_model ON embeddings(model, candidate_id);
"""

DDL = DDL + SIDE_TABLES_DDL + PROGRAM_FILES_DDL + RESUME_DDL + EMBEDDINGS_INDEX_DDL


def statements(script: str) -> list[str]:
    """The statements of a DDL script: ``--`` comments removed, split at ';' (no string literal
    in the schema holds either)."""
    code = "\n".join(line.split("--", 1)[0] for line in script.splitlines())
    return [s.strip() for s in code.split(";") if s.strip()]
