-- Change sets may be `revert`: the policy decided the next `terraform apply` should undo the change,
-- so nothing is written to the code. Before this, a revert was stored as `ignored`; those rows stay
-- as they are (the audit log holds their revert decision). Same change as migrations/sqlite/0003.
ALTER TABLE change_sets DROP CONSTRAINT change_sets_status_check;
ALTER TABLE change_sets ADD CONSTRAINT change_sets_status_check
    CHECK (status IN ('reconciled', 'escalated', 'no-change', 'ignored', 'revert', 'dry-run'));

-- The view gains a `reverted` count beside `ignored`: a column in the middle, so it is made again.
DROP VIEW drift_by_actor;
CREATE VIEW drift_by_actor AS
    SELECT actor,
           count(*) AS change_sets,
           count(*) FILTER (WHERE status = 'reconciled') AS reconciled,
           count(*) FILTER (WHERE status = 'escalated') AS escalated,
           count(*) FILTER (WHERE status = 'ignored') AS ignored,
           count(*) FILTER (WHERE status = 'revert') AS reverted,
           min(first_event_time) AS first_change,
           max(last_event_time) AS last_change
    FROM change_sets
    GROUP BY actor;

-- A new view gets the reader's SELECT from the default privileges when the same role made them;
-- granted here as well, for a database whose migrations ran as another role.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'driftback_reader') THEN
        GRANT SELECT ON drift_by_actor TO driftback_reader;
    END IF;
EXCEPTION
    WHEN insufficient_privilege THEN
        RAISE NOTICE 'SELECT on drift_by_actor not granted to driftback_reader (insufficient privilege); see docs/knowledge-base.md';
END
$$;
