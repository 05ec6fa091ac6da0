-- driftback knowledge base, Postgres edition: the whole schema. Applied by driftback-store's
-- migration runner (recorded in driftback_schema) when driftback opens the database.
-- The tables, columns and views have the same names as in migrations/sqlite; times are timestamptz,
-- lists are text[], JSON is jsonb, and knowledge vectors are pgvector `vector` with an HNSW index
-- (created once the first embedder fixes the dimension).

CREATE EXTENSION IF NOT EXISTS vector;

-- Every CloudTrail event driftback has seen, kept or not: nothing is dropped silently.
CREATE TABLE events (
    event_id    text PRIMARY KEY,                 -- CloudTrail eventID
    event_time  timestamptz NOT NULL,
    source      text NOT NULL,                    -- eventSource, e.g. 'ec2.amazonaws.com'
    name        text NOT NULL,                    -- eventName, e.g. 'ModifyInstanceAttribute'
    actor       text NOT NULL,                    -- principal ARN or best available identity
    disposition text NOT NULL CHECK (disposition IN ('kept', 'dropped', 'bad')),
    drop_reason text,                             -- why it was dropped (NULL when kept)
    raw         jsonb NOT NULL,                   -- the CloudTrail record as received
    recorded_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_event_time ON events (event_time);
CREATE INDEX events_disposition_reason ON events (disposition, drop_reason);
CREATE INDEX events_actor ON events (actor);

-- Input that could not be read as an event at all.
CREATE TABLE bad_records (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    location    text NOT NULL,                    -- file:line, SQS message id, ...
    reason      text NOT NULL,
    raw         text NOT NULL,                    -- verbatim, not necessarily JSON
    recorded_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX bad_records_recorded_at ON bad_records (recorded_at);

-- One row per change set (events on one resource by one actor session) and its outcome.
CREATE TABLE change_sets (
    id               text PRIMARY KEY,
    resource_id      text,
    address          text,
    actor            text NOT NULL,
    via              text NOT NULL,               -- console, cli, sdk, service, iac, ...
    first_event_time timestamptz NOT NULL,
    last_event_time  timestamptz NOT NULL,
    event_ids        text[] NOT NULL DEFAULT '{}',
    status           text NOT NULL
                     CHECK (status IN ('reconciled', 'escalated', 'no-change', 'ignored', 'dry-run')),
    decision         text,
    rule             text,
    rationale        text,
    branch           text,
    commit_id        text,
    diff             text,
    notes            text[] NOT NULL DEFAULT '{}',
    recorded_at      timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX change_sets_status ON change_sets (status);
CREATE INDEX change_sets_address ON change_sets (address);
CREATE INDEX change_sets_resource_id ON change_sets (resource_id);
CREATE INDEX change_sets_last_event_time ON change_sets (last_event_time);
CREATE INDEX change_sets_actor ON change_sets (actor);

-- Every policy decision with its evidence and rationale; append-only.
CREATE TABLE audit_log (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    change_set_id text NOT NULL,
    decision      text NOT NULL,                  -- reconcile, ignore_changes, revert, escalate, ...
    rule          text,
    rationale     text,
    evidence      jsonb NOT NULL DEFAULT '{}',
    recorded_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_log_change_set_id ON audit_log (change_set_id, id);
CREATE INDEX audit_log_recorded_at ON audit_log (recorded_at);

-- Change sets the daemon is collecting or processing; replicas claim them under a lease.
CREATE TABLE change_set_queue (
    id               text PRIMARY KEY,
    resource_key     text NOT NULL,
    actor_session    text NOT NULL,
    first_event_time timestamptz NOT NULL,
    last_event_time  timestamptz NOT NULL,
    event_ids        text[] NOT NULL DEFAULT '{}',
    status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'claimed', 'done', 'failed')),
    claimed_by       text,
    lease_until      timestamptz,
    attempts         integer NOT NULL DEFAULT 0,
    failure          text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX change_set_queue_status_last ON change_set_queue (status, last_event_time);

-- Where each event source got to.
CREATE TABLE checkpoints (
    key        text PRIMARY KEY,
    value      text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Who set which field, from which event: the field ownership ledger.
CREATE TABLE field_changes (
    address        text NOT NULL,
    attribute_path text NOT NULL,
    actor          text NOT NULL,
    event_id       text NOT NULL,
    event_time     timestamptz NOT NULL,
    change_set_id  text,
    recorded_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (address, attribute_path, event_id)
);
CREATE INDEX field_changes_field_time ON field_changes (address, attribute_path, event_time);
CREATE INDEX field_changes_actor ON field_changes (actor);

-- The owner of a field by policy.
CREATE TABLE field_owners (
    address        text NOT NULL,
    attribute_path text NOT NULL,
    owner          text NOT NULL,
    rule           text,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (address, attribute_path)
);

-- Which embedder the knowledge vectors come from (one row at most): vectors are never mixed.
CREATE TABLE knowledge_embedder (
    id          integer PRIMARY KEY CHECK (id = 1),
    name        text NOT NULL,
    dimension   integer NOT NULL CHECK (dimension > 0),
    recorded_at timestamptz NOT NULL DEFAULT now()
);

-- What was learned from past reconciliations, one entry per change signature. The embedding
-- column gets its dimension, and the HNSW index knowledge_embedding_hnsw, from the first embedder.
CREATE TABLE knowledge (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    signature     text NOT NULL UNIQUE,
    summary       text NOT NULL,
    embedding     vector,
    patch_diff    text,
    recipe_toml   text,
    change_set_id text,
    uses          bigint NOT NULL DEFAULT 0,
    successes     bigint NOT NULL DEFAULT 0,
    demoted       text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

-- Pull requests driftback opened.
CREATE TABLE pull_requests (
    number      bigint PRIMARY KEY,
    address     text NOT NULL,
    branch      text NOT NULL,
    url         text NOT NULL,
    state       text NOT NULL CHECK (state IN ('open', 'merged', 'closed')),
    head_commit text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX pull_requests_address_state ON pull_requests (address, state);

-- One row per reconciled change set: the trace, the decision, the patch and what it cost.
CREATE TABLE reconciliations (
    change_set_id     text PRIMARY KEY,
    trace_summary     text NOT NULL,
    actor             text NOT NULL,
    intent            text NOT NULL,
    motivation        text NOT NULL,
    decision          text NOT NULL,
    patch_diff        text,
    branch            text,
    commit_id         text,
    pull_request      text,
    prompt_tokens     bigint NOT NULL DEFAULT 0,
    completion_tokens bigint NOT NULL DEFAULT 0,
    model             text,
    duration_ms       bigint NOT NULL DEFAULT 0,
    outcome           text NOT NULL,
    recorded_at       timestamptz NOT NULL DEFAULT now()
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
           count(*) AS change_sets,
           count(*) FILTER (WHERE status = 'reconciled') AS reconciled,
           count(*) FILTER (WHERE status = 'escalated') AS escalated,
           count(*) FILTER (WHERE status = 'ignored') AS ignored,
           min(first_event_time) AS first_change,
           max(last_event_time) AS last_change
    FROM change_sets
    GROUP BY actor;

CREATE VIEW field_ownership AS
    WITH ranked AS (
        SELECT address, attribute_path, actor, event_id, event_time,
               count(*) OVER (PARTITION BY address, attribute_path) AS changes,
               row_number() OVER (PARTITION BY address, attribute_path ORDER BY event_time DESC, event_id DESC) AS rn
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
           CASE WHEN uses > 0 THEN round(successes::numeric / uses, 3) END AS success_rate,
           demoted, updated_at
    FROM knowledge
    WHERE recipe_toml IS NOT NULL;

-- A read-only role for people and dashboards: SELECT on every table and view, now and later.
-- Roles belong to the whole cluster; without the privilege to create it, the schema is still
-- created and docs/knowledge-base.md says how an administrator adds the role.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'driftback_reader') THEN
        CREATE ROLE driftback_reader NOLOGIN;
    END IF;
EXCEPTION
    WHEN duplicate_object OR unique_violation THEN
        NULL; -- another database's migration created it at the same moment
    WHEN insufficient_privilege THEN
        RAISE NOTICE 'role driftback_reader not created (needs CREATEROLE); see docs/knowledge-base.md';
END
$$;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'driftback_reader') THEN
        EXECUTE format('GRANT CONNECT ON DATABASE %I TO driftback_reader', current_database());
        EXECUTE format('GRANT USAGE ON SCHEMA %I TO driftback_reader', current_schema());
        EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA %I TO driftback_reader', current_schema());
        EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT SELECT ON TABLES TO driftback_reader',
                       current_schema());
    END IF;
EXCEPTION
    WHEN insufficient_privilege THEN
        RAISE NOTICE 'grants to driftback_reader not made (insufficient privilege); see docs/knowledge-base.md';
END
$$;
