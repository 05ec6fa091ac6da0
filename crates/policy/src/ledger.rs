//! The field ownership ledger and oscillation detection: who set which field when, and whether two
//! actors are setting one field back and forth. Pure functions over a history.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::kind::DecisionKind;

/// One out-of-band change of one field, as the ledger records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// Resource address (`aws_autoscaling_group.web`).
    pub address: String,
    /// Dotted attribute path (`desired_capacity`, `tags.Team`).
    pub path: String,
    /// The actor's stable id (a person, a role, a service).
    pub actor: String,
    /// `person`, `automation`, ... (see `driftback_attribute::ActorKind`).
    pub actor_kind: String,
    /// The value set, when it is a literal.
    pub value: Option<Value>,
    /// When the change was made (its change set's last event).
    pub time: DateTime<Utc>,
    pub change_set: String,
    /// The event that made the change (the change set's last event).
    pub event_id: String,
    /// What was decided.
    pub decision: DecisionKind,
    /// Who owns the field by policy.
    pub owner: String,
}

/// Two or more actors setting one field back and forth within the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Oscillation {
    pub address: String,
    pub path: String,
    /// The actors involved, in order of first appearance.
    pub actors: Vec<String>,
    /// The field's changes within the window, oldest first, the new one last.
    pub history: Vec<LedgerEntry>,
    /// True when this change is the one that makes the pattern: it is reported now. False when
    /// the oscillation was already reported and this change continues it.
    pub first_report: bool,
}

impl Oscillation {
    /// `aws_autoscaling_group.web.desired_capacity between alice and ops-bot: alice=10 at ..., ...`
    pub fn describe(&self) -> String {
        let steps: Vec<String> = self
            .history
            .iter()
            .map(|e| {
                let value = e.value.as_ref().map(|v| v.to_string()).unwrap_or_else(|| "(changed)".into());
                format!("{} set {value} at {}", e.actor, e.time.format("%Y-%m-%dT%H:%M:%SZ"))
            })
            .collect();
        format!("{}.{} between {}: {}", self.address, self.path, self.actors.join(" and "), steps.join(", "))
    }
}

/// Changes of one actor between changes of another, within `window` before `new`'s time: at
/// least two such switches (A, B, A) is an oscillation. `history` may hold any fields and times;
/// only the same field within the window counts.
pub fn find_oscillation<'a>(
    history: impl IntoIterator<Item = &'a LedgerEntry>,
    new: &'a LedgerEntry,
    window: Duration,
) -> Option<Oscillation> {
    let since = new.time - window;
    let mut field: Vec<&LedgerEntry> = history
        .into_iter()
        .filter(|e| e.address == new.address && e.path == new.path && e.time >= since && e.time <= new.time)
        .filter(|e| e.change_set != new.change_set)
        .collect();
    field.sort_by_key(|e| e.time);
    let before = switches(field.iter().map(|e| e.actor.as_str()));
    field.push(new);
    let after = switches(field.iter().map(|e| e.actor.as_str()));
    if after < 2 {
        return None;
    }
    let mut actors: Vec<String> = Vec::new();
    for e in &field {
        if !actors.contains(&e.actor) {
            actors.push(e.actor.clone());
        }
    }
    Some(Oscillation {
        address: new.address.clone(),
        path: new.path.clone(),
        actors,
        history: field.into_iter().cloned().collect(),
        first_report: before < 2,
    })
}

fn switches<'a>(actors: impl Iterator<Item = &'a str>) -> usize {
    let mut count = 0;
    let mut last: Option<&str> = None;
    for a in actors {
        if last.is_some_and(|l| l != a) {
            count += 1;
        }
        last = Some(a);
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(actor: &str, minute: i64, value: i64) -> LedgerEntry {
        let base: DateTime<Utc> = "2024-03-01T00:00:00Z".parse().unwrap();
        LedgerEntry {
            address: "aws_autoscaling_group.web".into(),
            path: "max_size".into(),
            actor: actor.into(),
            actor_kind: "person".into(),
            value: Some(Value::from(value)),
            time: base + Duration::minutes(minute),
            change_set: format!("cs-{actor}-{minute}"),
            event_id: format!("e-{minute}"),
            decision: DecisionKind::Reconcile,
            owner: "terraform".into(),
        }
    }

    #[test]
    fn back_and_forth_within_the_window_is_an_oscillation_reported_once() {
        let hour = Duration::hours(1);
        let h = [entry("alice", 0, 10), entry("cron", 10, 3)];
        // A, B: one switch, not yet.
        assert!(find_oscillation(&h[..1], &h[1], hour).is_none());
        // A, B, A: reported now, with both actors and the whole history.
        let third = entry("alice", 20, 10);
        let o = find_oscillation(&h, &third, hour).unwrap();
        assert_eq!(o.actors, ["alice", "cron"]);
        assert_eq!(o.history.len(), 3);
        assert!(o.first_report);
        assert!(o.describe().contains("alice set 10"), "{}", o.describe());
        // A, B, A, B: still oscillating, already reported.
        let mut longer = h.to_vec();
        longer.push(third);
        let o = find_oscillation(&longer, &entry("cron", 30, 3), hour).unwrap();
        assert!(!o.first_report);
        // The same actor again and again is not an oscillation.
        let same = [entry("alice", 0, 1), entry("alice", 10, 2)];
        assert!(find_oscillation(&same, &entry("alice", 20, 3), hour).is_none());
        // Outside the window the old changes do not count.
        assert!(find_oscillation(&h, &entry("alice", 20, 10), Duration::minutes(5)).is_none());
        // Another field does not count.
        let mut other = entry("alice", 20, 10);
        other.path = "min_size".into();
        assert!(find_oscillation(&h, &other, hour).is_none());
    }
}
