-- One actor session's change sets on other resources are planned together (an edit of a value
-- they share makes all of them, once). The daemon finds a claimed change set's siblings among
-- the queued change sets of its session, near it in time; and it remembers which change sets a
-- delivered edit already made, so a restart does not write them again. Same change as
-- migrations/sqlite/0005.
CREATE INDEX change_set_queue_session ON change_set_queue (actor_session, first_event_time);

-- A change set whose change another change set's delivered edit already made: that delivery
-- (branch, commit and what the caller keeps of it) stands for its own.
CREATE TABLE covered_change_sets (
    change_set_id    text PRIMARY KEY,
    by_change_set_id text NOT NULL,
    branch           text NOT NULL,
    commit_id        text NOT NULL,
    delivery         jsonb NOT NULL DEFAULT '{}',
    recorded_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX covered_change_sets_by ON covered_change_sets (by_change_set_id);
