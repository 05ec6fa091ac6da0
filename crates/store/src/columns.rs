//! Column lists shared by the SQLite and Postgres queries (both schemas name columns alike).

macro_rules! queue_columns {
    () => {
        "id, resource_key, actor_session, first_event_time, last_event_time, event_ids, status, \
                             claimed_by, lease_until, attempts, failure, created_at"
    };
}

macro_rules! knowledge_columns {
    () => {
        "id, signature, summary, patch_diff, recipe_toml, change_set_id, uses, successes, \
                                 demoted, created_at, updated_at"
    };
}

macro_rules! reconciliation_columns {
    () => {
        "change_set_id, trace_summary, actor, intent, motivation, decision, patch_diff, \
     branch, commit_id, pull_request, prompt_tokens, completion_tokens, model, duration_ms, outcome, recorded_at"
    };
}
