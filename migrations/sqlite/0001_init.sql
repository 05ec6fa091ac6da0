-- driftback knowledge base, embedded SQLite edition: initial schema.
--
-- Applied by driftback-store's migration runner, which records it in `driftback_schema`.
-- Times are UTC text, RFC 3339 with a fixed six-digit fraction ('2024-05-01T12:00:00.000000Z'),
-- so they sort correctly as text and SQLite's date functions read them.

-- Every CloudTrail event driftback has seen, kept or not: nothing is dropped silently.
CREATE TABLE events (
    event_id    TEXT PRIMARY KEY NOT NULL,        -- CloudTrail eventID
    event_time  TEXT NOT NULL,
    source      TEXT NOT NULL,                    -- eventSource, e.g. 'ec2.amazonaws.com'
    name        TEXT NOT NULL,                    -- eventName, e.g. 'ModifyInstanceAttribute'
    actor       TEXT NOT NULL,                    -- principal ARN or best available identity
    disposition TEXT NOT NULL CHECK (disposition IN ('kept', 'dropped', 'bad')),
    drop_reason TEXT,                             -- why it was dropped (NULL when kept)
    raw         TEXT NOT NULL CHECK (json_valid(raw)),
    recorded_at TEXT NOT NULL
);
CREATE INDEX events_event_time ON events (event_time);
CREATE INDEX events_disposition_reason ON events (disposition, drop_reason);
CREATE INDEX events_actor ON events (actor);

-- Input that could not be read as an event at all (unparseable JSON, a record without an eventID...).
CREATE TABLE bad_records (
    id          INTEGER PRIMARY KEY,
    location    TEXT NOT NULL,                    -- file:line, SQS message id, ...
    reason      TEXT NOT NULL,
    raw         TEXT NOT NULL,                    -- verbatim, not necessarily JSON
    recorded_at TEXT NOT NULL
);
CREATE INDEX bad_records_recorded_at ON bad_records (recorded_at);

-- One row per change set (events on one resource by one actor session), updated as it moves on.
CREATE TABLE change_sets (
    id               TEXT PRIMARY KEY NOT NULL,
    resource_id      TEXT,                        -- cloud identifier (id, ARN or name)
    address          TEXT,                        -- Terraform address, when located
    actor            TEXT NOT NULL,
    via              TEXT NOT NULL,               -- console, cli, sdk, service, iac, ...
    first_event_time TEXT NOT NULL,
    last_event_time  TEXT NOT NULL,
    event_ids        TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(event_ids)),  -- JSON array of eventIDs
    status           TEXT NOT NULL
                     CHECK (status IN ('reconciled', 'escalated', 'no-change', 'ignored', 'dry-run')),
    decision         TEXT,                        -- reconcile, ignore_changes, revert, escalate
    rule             TEXT,                        -- the policy rule that decided
    rationale        TEXT,
    branch           TEXT,
    commit_id        TEXT,
    diff             TEXT,
    notes            TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(notes)),      -- JSON array of strings
    recorded_at      TEXT NOT NULL,
    updated_at       TEXT NOT NULL
);
CREATE INDEX change_sets_status ON change_sets (status);
CREATE INDEX change_sets_address ON change_sets (address);
CREATE INDEX change_sets_resource_id ON change_sets (resource_id);
CREATE INDEX change_sets_last_event_time ON change_sets (last_event_time);

-- Every decision, with its rationale; append-only.
CREATE TABLE audit_log (
    id            INTEGER PRIMARY KEY,
    change_set_id TEXT NOT NULL REFERENCES change_sets (id),
    decision      TEXT NOT NULL,
    rule          TEXT,
    rationale     TEXT,
    recorded_at   TEXT NOT NULL
);
CREATE INDEX audit_log_change_set_id ON audit_log (change_set_id);
CREATE INDEX audit_log_recorded_at ON audit_log (recorded_at);
