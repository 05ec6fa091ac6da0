-- driftback knowledge base, embedded SQLite edition: the daemon's work queue, source checkpoints,
-- the field ownership ledger, decisions with evidence, knowledge entries, pull requests,
-- reconciliations, and views for people. Same tables, columns and views as migrations/postgres.

-- The audit log takes decisions of any kind with their evidence, and no longer requires the change
-- set's outcome row to exist first (the policy decides before the outcome is recorded).
CREATE TABLE audit_log_v2 (
    id            INTEGER PRIMARY KEY,
    change_set_id TEXT NOT NULL,
    decision      TEXT NOT NULL,                  -- reconcile, ignore_changes, revert, escalate, ...
    rule          TEXT,
    rationale     TEXT,
    evidence      TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(evidence)),
    recorded_at   TEXT NOT NULL
);
INSERT INTO audit_log_v2 (id, change_set_id, decision, rule, rationale, recorded_at)
    SELECT id, change_set_id, decision, rule, rationale, recorded_at FROM audit_log;
DROP TABLE audit_log;
ALTER TABLE audit_log_v2 RENAME TO audit_log;
CREATE INDEX audit_log_change_set_id ON audit_log (change_set_id, id);
CREATE INDEX audit_log_recorded_at ON audit_log (recorded_at);

-- Change sets the daemon is collecting or processing: a restart loses no quiet window, and
-- replicas claim each one under a lease.
CREATE TABLE change_set_queue (
    id               TEXT PRIMARY KEY NOT NULL,
    resource_key     TEXT NOT NULL,
    actor_session    TEXT NOT NULL,
    first_event_time TEXT NOT NULL,
    last_event_time  TEXT NOT NULL,
    event_ids        TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(event_ids)),
    status           TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'claimed', 'done', 'failed')),
    claimed_by       TEXT,
    lease_until      TEXT,
    attempts         INTEGER NOT NULL DEFAULT 0,
    failure          TEXT,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL
);
CREATE INDEX change_set_queue_status_last ON change_set_queue (status, last_event_time);

-- Where each event source got to (e.g. the CloudTrail backfill position).
CREATE TABLE checkpoints (
    key        TEXT PRIMARY KEY NOT NULL,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

-- Who set which field, from which event: the field ownership ledger.
CREATE TABLE field_changes (
    address        TEXT NOT NULL,                 -- Terraform resource address
    attribute_path TEXT NOT NULL,                 -- dotted, e.g. tags.Owner
    actor          TEXT NOT NULL,
    event_id       TEXT NOT NULL,
    event_time     TEXT NOT NULL,
    change_set_id  TEXT,
    recorded_at    TEXT NOT NULL,
    PRIMARY KEY (address, attribute_path, event_id)
);
CREATE INDEX field_changes_field_time ON field_changes (address, attribute_path, event_time);
CREATE INDEX field_changes_actor ON field_changes (actor);

-- The owner of a field by policy.
CREATE TABLE field_owners (
    address        TEXT NOT NULL,
    attribute_path TEXT NOT NULL,
    owner          TEXT NOT NULL,
    rule           TEXT,
    updated_at     TEXT NOT NULL,
    PRIMARY KEY (address, attribute_path)
);

-- Which embedder the knowledge vectors come from (one row at most): vectors are never mixed.
CREATE TABLE knowledge_embedder (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    name        TEXT NOT NULL,
    dimension   INTEGER NOT NULL CHECK (dimension > 0),
    recorded_at TEXT NOT NULL
);

-- What was learned from past reconciliations, one entry per change signature.
CREATE TABLE knowledge (
    id            INTEGER PRIMARY KEY,
    signature     TEXT NOT NULL UNIQUE,           -- normalised change signature
    summary       TEXT NOT NULL,
    embedding     BLOB,                           -- little-endian float32 components
    patch_diff    TEXT,
    recipe_toml   TEXT,                           -- learned recipe, in the built-in catalog's format
    change_set_id TEXT,
    uses          INTEGER NOT NULL DEFAULT 0,
    successes     INTEGER NOT NULL DEFAULT 0,
    demoted       TEXT,                           -- why the recipe is no longer offered
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);

-- Pull requests driftback opened, one per resource while open.
CREATE TABLE pull_requests (
    number      INTEGER PRIMARY KEY NOT NULL,
    address     TEXT NOT NULL,
    branch      TEXT NOT NULL,
    url         TEXT NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('open', 'merged', 'closed')),
    head_commit TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX pull_requests_address_state ON pull_requests (address, state);

-- One row per reconciled change set: the trace, the decision, the patch and what it cost.
CREATE TABLE reconciliations (
    change_set_id     TEXT PRIMARY KEY NOT NULL,
    trace_summary     TEXT NOT NULL,
    actor             TEXT NOT NULL,
    intent            TEXT NOT NULL,
    motivation        TEXT NOT NULL,
    decision          TEXT NOT NULL,
    patch_diff        TEXT,
    branch            TEXT,
    commit_id         TEXT,
    pull_request      TEXT,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    model             TEXT,
    duration_ms       INTEGER NOT NULL DEFAULT 0,
    outcome           TEXT NOT NULL,
    recorded_at       TEXT NOT NULL
);
CREATE INDEX reconciliations_recorded_at ON reconciliations (recorded_at);
CREATE INDEX reconciliations_actor ON reconciliations (actor);

-- Views for people (see docs/knowledge-base.md).
CREATE VIEW recent_reconciliations AS
    SELECT recorded_at, change_set_id, actor, intent, motivation, decision, outcome, branch, pull_request,
           model, prompt_tokens + completion_tokens AS tokens, duration_ms, trace_summary
    FROM reconciliations
    ORDER BY recorded_at DESC;

CREATE VIEW drift_by_actor AS
    SELECT actor,
           COUNT(*) AS change_sets,
           SUM(CASE WHEN status = 'reconciled' THEN 1 ELSE 0 END) AS reconciled,
           SUM(CASE WHEN status = 'escalated' THEN 1 ELSE 0 END) AS escalated,
           SUM(CASE WHEN status = 'ignored' THEN 1 ELSE 0 END) AS ignored,
           MIN(first_event_time) AS first_change,
           MAX(last_event_time) AS last_change
    FROM change_sets
    GROUP BY actor;

CREATE VIEW field_ownership AS
    WITH ranked AS (
        SELECT address, attribute_path, actor, event_id, event_time,
               COUNT(*) OVER (PARTITION BY address, attribute_path) AS changes,
               ROW_NUMBER() OVER (PARTITION BY address, attribute_path ORDER BY event_time DESC, event_id DESC) AS rn
        FROM field_changes
    )
    SELECT r.address, r.attribute_path, r.actor AS last_actor, r.event_time AS last_changed_at,
           r.event_id AS last_event_id, r.changes, o.owner AS policy_owner, o.rule AS policy_rule
    FROM ranked r LEFT JOIN field_owners o ON o.address = r.address AND o.attribute_path = r.attribute_path
    WHERE r.rn = 1
    UNION ALL
    SELECT o.address, o.attribute_path, NULL, NULL, NULL, 0, o.owner, o.rule
    FROM field_owners o
    WHERE NOT EXISTS (
        SELECT 1 FROM field_changes f WHERE f.address = o.address AND f.attribute_path = o.attribute_path
    );

CREATE VIEW recipe_statistics AS
    SELECT id, signature, uses, successes,
           CASE WHEN uses > 0 THEN ROUND(1.0 * successes / uses, 3) END AS success_rate,
           demoted, updated_at
    FROM knowledge
    WHERE recipe_toml IS NOT NULL;
