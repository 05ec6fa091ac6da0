-- Change sets may be `revert`: the policy decided the next `terraform apply` should undo the change,
-- so nothing is written to the code. Before this, a revert was stored as `ignored`; those rows stay
-- as they are (the audit log holds their revert decision). Same change as migrations/postgres/0002.
--
-- SQLite cannot alter a CHECK constraint: the table is rebuilt with the same columns, rows and
-- indexes. No table references change_sets; the one view that reads it is dropped first (a rename
-- checks every view) and made again with a `reverted` count.
DROP VIEW drift_by_actor;

CREATE TABLE change_sets_v2 (
    id               TEXT PRIMARY KEY NOT NULL,
    resource_id      TEXT,                        -- cloud identifier (id, ARN or name)
    address          TEXT,                        -- Terraform address, when located
    actor            TEXT NOT NULL,
    via              TEXT NOT NULL,               -- console, cli, sdk, service, iac, ...
    first_event_time TEXT NOT NULL,
    last_event_time  TEXT NOT NULL,
    event_ids        TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(event_ids)),  -- JSON array of eventIDs
    status           TEXT NOT NULL
                     CHECK (status IN ('reconciled', 'escalated', 'no-change', 'ignored', 'revert', 'dry-run')),
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
INSERT INTO change_sets_v2 (id, resource_id, address, actor, via, first_event_time, last_event_time, event_ids,
                            status, decision, rule, rationale, branch, commit_id, diff, notes, recorded_at, updated_at)
    SELECT id, resource_id, address, actor, via, first_event_time, last_event_time, event_ids,
           status, decision, rule, rationale, branch, commit_id, diff, notes, recorded_at, updated_at
    FROM change_sets;
DROP TABLE change_sets;
ALTER TABLE change_sets_v2 RENAME TO change_sets;
CREATE INDEX change_sets_status ON change_sets (status);
CREATE INDEX change_sets_address ON change_sets (address);
CREATE INDEX change_sets_resource_id ON change_sets (resource_id);
CREATE INDEX change_sets_last_event_time ON change_sets (last_event_time);

CREATE VIEW drift_by_actor AS
    SELECT actor,
           COUNT(*) AS change_sets,
           SUM(CASE WHEN status = 'reconciled' THEN 1 ELSE 0 END) AS reconciled,
           SUM(CASE WHEN status = 'escalated' THEN 1 ELSE 0 END) AS escalated,
           SUM(CASE WHEN status = 'ignored' THEN 1 ELSE 0 END) AS ignored,
           SUM(CASE WHEN status = 'revert' THEN 1 ELSE 0 END) AS reverted,
           MIN(first_event_time) AS first_change,
           MAX(last_event_time) AS last_change
    FROM change_sets
    GROUP BY actor;
