//! The daemon's pending change sets: how a delivery's new events join them (the planner's additions,
//! checked; another id when one is no longer pending) and how a stored one absorbs an addition.

use std::collections::HashSet;

use crate::StoreError;
use crate::check::check_pending;
use crate::records::{PendingChangeSet, PendingPlanner};

/// The planner's change sets must be valid, hold only events new in this delivery, and group on
/// one of the delivery's resource keys: nothing else may start or extend a change set.
fn check_additions(
    additions: &[PendingChangeSet],
    new_kept: &HashSet<String>,
    resource_keys: &HashSet<&str>,
) -> Result<(), StoreError> {
    for a in additions {
        check_pending(a)?;
        if a.event_ids.is_empty() {
            return Err(StoreError::Data(format!("pending change set {}: it has no events", a.id)));
        }
        if let Some(id) = a.event_ids.iter().find(|id| !new_kept.contains(*id)) {
            return Err(StoreError::Data(format!(
                "pending change set {}: event {id} is not a kept event recorded for the first time by this delivery",
                a.id
            )));
        }
        if !resource_keys.contains(a.resource_key.as_str()) {
            return Err(StoreError::Data(format!(
                "pending change set {}: resource key {:?} is not among the delivery's resource keys",
                a.id, a.resource_key
            )));
        }
    }
    Ok(())
}

/// How many other ids [`PendingPlanner::another_id`] is asked for before giving up.
const MAX_ID_ATTEMPTS: u32 = 100;

/// The change sets `planner` forms from the kept events a delivery recorded for the first time
/// (`new_kept`) and the `open` pending ones on its resource keys, checked.
pub(crate) fn plan_additions(
    planner: &dyn PendingPlanner,
    new_kept: &HashSet<String>,
    open: Vec<PendingChangeSet>,
    resource_keys: &HashSet<&str>,
) -> Result<Vec<PendingChangeSet>, StoreError> {
    let additions = planner.plan(new_kept, open);
    check_additions(&additions, new_kept, resource_keys)?;
    Ok(additions)
}

/// One planned change set on its way into the queue: first under the planner's id, then, each
/// time that id turns out to be no longer pending, under [`PendingPlanner::another_id`].
pub(crate) struct Placement<'a> {
    planner: &'a dyn PendingPlanner,
    addition: &'a PendingChangeSet,
    candidate: PendingChangeSet,
    attempt: u32,
}

impl<'a> Placement<'a> {
    pub(crate) fn new(planner: &'a dyn PendingPlanner, addition: &'a PendingChangeSet) -> Placement<'a> {
        Placement { planner, addition, candidate: addition.clone(), attempt: 0 }
    }

    /// The change set to save now.
    pub(crate) fn candidate(&self) -> &PendingChangeSet {
        &self.candidate
    }

    /// Moves on to another id, after the candidate's was found no longer pending; refused after
    /// [`MAX_ID_ATTEMPTS`].
    pub(crate) fn retry(&mut self) -> Result<(), StoreError> {
        self.attempt += 1;
        if self.attempt > MAX_ID_ATTEMPTS {
            return Err(no_free_id(self.addition));
        }
        self.candidate.id = self.planner.another_id(self.addition, self.attempt);
        check_pending(&self.candidate)
    }

    /// The id it was saved under.
    pub(crate) fn into_id(self) -> String {
        self.candidate.id
    }
}

fn no_free_id(a: &PendingChangeSet) -> StoreError {
    StoreError::Data(format!(
        "pending change set {}: no free id after {MAX_ID_ATTEMPTS} attempts (another_id repeats itself?)",
        a.id
    ))
}

/// Merges `new` into `stored`: event ids united (stored order, then new ones), times widened.
pub(crate) fn merge_pending(stored: &PendingChangeSet, new: &PendingChangeSet) -> PendingChangeSet {
    let mut event_ids = stored.event_ids.clone();
    for id in &new.event_ids {
        if !event_ids.contains(id) {
            event_ids.push(id.clone());
        }
    }
    PendingChangeSet {
        id: stored.id.clone(),
        resource_key: new.resource_key.clone(),
        actor_session: new.actor_session.clone(),
        first_event_time: stored.first_event_time.min(new.first_event_time),
        last_event_time: stored.last_event_time.max(new.last_event_time),
        event_ids,
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;

    #[test]
    fn merging_a_pending_change_set_unites_ids_and_widens_times() {
        use chrono::TimeZone;
        let t = |s| Utc.with_ymd_and_hms(2024, 5, 1, 12, 0, s).unwrap();
        let stored = PendingChangeSet {
            id: "cs".into(),
            resource_key: "ec2:i-1".into(),
            actor_session: "alice".into(),
            first_event_time: t(10),
            last_event_time: t(20),
            event_ids: vec!["a".into(), "b".into()],
        };
        let new = PendingChangeSet {
            first_event_time: t(5),
            last_event_time: t(15),
            event_ids: vec!["c".into(), "a".into()],
            ..stored.clone()
        };
        let merged = merge_pending(&stored, &new);
        assert_eq!(merged.event_ids, ["a", "b", "c"]);
        assert_eq!((merged.first_event_time, merged.last_event_time), (t(5), t(20)));
    }
}
