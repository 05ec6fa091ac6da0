//! The field ownership ledger a decision reads: earlier changes of the fields a plan touches, from
//! the knowledge base (earlier runs, other replicas) and from this run (change sets driven before,
//! not yet or never recorded).

use std::collections::{BTreeSet, HashSet};

use chrono::Duration;

use driftback_events::ChangeSet;
use driftback_policy::{DecisionKind, LedgerEntry, field_changes};
use driftback_recipes::Plan;
use driftback_store::Store;

use super::outcome::{Scope, scoped};

/// How many of a field's latest changes are read as its history. An oscillation shows in the latest
/// changes; a field an autoscaler sets thousands of times a day costs no more than this to decide.
pub const HISTORY_LIMIT: usize = 200;

/// The ledger of one run of the driver.
#[derive(Debug, Default)]
pub struct History {
    /// Field changes decided in this run, in order.
    run: Vec<LedgerEntry>,
    /// The change sets decided in this run: their field changes are in `run`, and when the store
    /// has them too they are not read twice.
    decided: HashSet<String>,
}

impl History {
    /// Earlier changes of every field `plan` touches, within `window_secs` before the change set's
    /// first event: the store's (the latest [`HISTORY_LIMIT`] of each field), then this run's.
    /// In a workspace of a stack (`scope`), only that workspace's changes of the fields count.
    /// Changes recorded for this very change set (an earlier attempt, cut short before its outcome
    /// was recorded) are not history: deciding again gives the same decision.
    pub async fn before(
        &self,
        store: Option<&Store>,
        change_set: &ChangeSet,
        plan: Option<&Plan>,
        window_secs: u64,
        scope: Option<&Scope>,
    ) -> anyhow::Result<Vec<LedgerEntry>> {
        let mut history = Vec::new();
        if let (Some(store), Some(plan)) = (store, plan) {
            let window = Duration::seconds(i64::try_from(window_secs).unwrap_or(i64::MAX / 1000));
            let since = change_set.first_time() - window;
            let fields: BTreeSet<(String, String)> = field_changes(plan)
                .into_iter()
                .filter_map(|f| f.path.map(|path| (f.address.to_string(), path)))
                .collect();
            for (address, path) in fields {
                // The same address in two workspaces is two resources: the ledger keys them apart.
                for c in store.field_history(&scoped(scope, &address), &path, since, HISTORY_LIMIT).await? {
                    let id = c.change_set_id.clone().unwrap_or_default();
                    if id == change_set.id || self.decided.contains(&id) {
                        continue;
                    }
                    history.push(LedgerEntry {
                        address: address.clone(),
                        path: c.attribute_path,
                        actor: c.actor,
                        actor_kind: "unknown".into(),
                        value: None,
                        time: c.event_time,
                        change_set: id,
                        event_id: c.event_id,
                        decision: DecisionKind::Reconcile,
                        owner: String::new(),
                    });
                }
            }
        }
        history.extend(self.run.iter().filter(|e| e.change_set != change_set.id).cloned());
        Ok(history)
    }

    /// Add what was decided on `change_set` to this run's ledger.
    pub fn push(&mut self, change_set: &ChangeSet, entries: &[LedgerEntry]) {
        self.decided.insert(change_set.id.clone());
        self.run.extend(entries.iter().cloned());
    }
}
