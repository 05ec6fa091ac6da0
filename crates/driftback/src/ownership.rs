//! The field ownership ledger and the audit log across runs: history loaded from the knowledge
//! base before deciding, and every decision (with evidence), field change and owner recorded after.

use std::collections::BTreeSet;

use chrono::Duration;

use driftback_events::ChangeSet;
use driftback_policy::{DecisionKind, LedgerEntry, Policy, field_changes};
use driftback_recipes::Catalog;
use driftback_store::{DecisionRecord, FieldChange, Store};
use driftback_terraform::{Repo, State};

use crate::pipeline::Outcome;

/// How many of a field's latest changes are read as its history. An oscillation shows in the latest
/// changes; a field an autoscaler sets thousands of times a day costs no more than this to decide.
pub const HISTORY_LIMIT: usize = 200;

/// Earlier changes of every field these change sets touch, within the policy's oscillation window
/// (the latest [`HISTORY_LIMIT`] of each).
/// The fields are found by planning (pure and cheap); change sets that cannot be planned touch none.
/// Changes recorded for these very change sets (an earlier attempt, cut short before its outcome was
/// recorded) are not history: deciding again gives the same decision.
pub async fn load_history(
    store: &Store,
    catalog: &Catalog,
    state: &State,
    repo: &Repo,
    policy: &Policy,
    change_sets: &[ChangeSet],
) -> anyhow::Result<Vec<LedgerEntry>> {
    let Some(earliest) = change_sets.iter().map(ChangeSet::first_time).min() else { return Ok(vec![]) };
    let window = Duration::seconds(i64::try_from(policy.oscillation_window_secs).unwrap_or(i64::MAX / 1000));
    let mut fields: BTreeSet<(String, String)> = BTreeSet::new();
    for change_set in change_sets {
        if let Ok(plan) = driftback_recipes::plan(catalog, change_set, state, repo) {
            for f in field_changes(&plan) {
                if let Some(path) = f.path {
                    fields.insert((f.address.to_string(), path));
                }
            }
        }
    }
    let deciding: BTreeSet<&str> = change_sets.iter().map(|c| c.id.as_str()).collect();
    let mut history = Vec::new();
    for (address, path) in fields {
        for c in store.field_history(&address, &path, earliest - window, HISTORY_LIMIT).await? {
            if c.change_set_id.as_deref().is_some_and(|id| deciding.contains(id)) {
                continue;
            }
            history.push(LedgerEntry {
                address: c.address,
                path: c.attribute_path,
                actor: c.actor,
                actor_kind: "unknown".into(),
                value: None,
                time: c.event_time,
                change_set: c.change_set_id.unwrap_or_default(),
                event_id: c.event_id,
                decision: DecisionKind::Reconcile,
                owner: String::new(),
            });
        }
    }
    Ok(history)
}

/// Record what was decided on a change set: the decision with its evidence in the audit log, the
/// field changes in the ledger, and each field's owner by policy.
pub async fn record(store: &Store, change_set: &ChangeSet, outcome: &Outcome) -> anyhow::Result<()> {
    let Some(decision) = &outcome.decision else { return Ok(()) };
    store
        .record_decision(&DecisionRecord {
            change_set_id: change_set.id.clone(),
            kind: decision.kind.as_str().to_string(),
            rule: Some(decision.rule.clone()),
            evidence: serde_json::to_value(decision)?,
            rationale: Some(decision.rationale.clone()),
        })
        .await?;
    let changes: Vec<FieldChange> = outcome
        .ledger
        .iter()
        .map(|e| FieldChange {
            address: e.address.clone(),
            attribute_path: e.path.clone(),
            actor: e.actor.clone(),
            event_id: e.event_id.clone(),
            event_time: e.time,
            change_set_id: Some(e.change_set.clone()),
        })
        .collect();
    store.record_field_changes(&changes).await?;
    for f in &decision.fields {
        if let Some(path) = &f.path {
            store.set_field_owner(&f.address, path, &f.owner, Some(&f.rule)).await?;
        }
    }
    Ok(())
}
