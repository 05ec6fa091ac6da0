//! A person's answer to a decision that waited for them (`/driftback accept`, `/driftback own
//! <field> by <actor>`): the change set is driven again, and the policy's decision is overruled by
//! theirs, recorded with who decided and where. What it writes goes through the normal delivery:
//! a branch, a commit, the resource's pull request.

use std::collections::HashMap;

use anyhow::Context;

use driftback_events::{ApiEvent, ChangeSet, read_record, time_order};
use driftback_policy::{Decided, DecisionKind};
use driftback_recipes::{Plan, ResourceChange};
use driftback_store::Store;
use driftback_terraform::{Address, Op};

/// The rule a person's decision is recorded under.
pub const PERSON_RULE: &str = "person";

/// What a person answered, who, and in which thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonDecision {
    /// Their login (write access was checked before).
    pub user: String,
    /// The issue or pull request they answered in.
    pub thread: u64,
    pub answer: Answer,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Write the change into the code.
    Accept,
    /// `actor` owns `field`: `lifecycle { ignore_changes }` and a policy rule.
    Own { field: String, actor: String },
}

impl PersonDecision {
    fn by(&self) -> String {
        format!("{} in #{}", self.user, self.thread)
    }
}

/// The policy's decision replaced by the person's. Accept: the held edit (or the plan, when the
/// policy would have written it anyway) with the decision `reconcile`. Own: the resource's
/// `lifecycle { ignore_changes }` for the field, the decision `ignore_changes`, the field's owner
/// the actor. The policy's own decision stays in the evidence.
pub fn overrule(decided: Decided, person: &PersonDecision) -> Decided {
    let Decided { mut decision, plan, held, mut ledger } = decided;
    decision.evidence.push(format!(
        "the policy decided {} by the rule {}: {}",
        decision.kind.as_str(),
        decision.rule,
        decision.rationale
    ));
    decision.evidence.push(format!("decided by {}", person.by()));
    decision.rule = PERSON_RULE.into();
    // What was split is decided now: the person's answer covers the fields that waited.
    decision.split = None;
    let plan = match &person.answer {
        Answer::Accept => {
            let plan = if decision.kind >= DecisionKind::Revert { held } else { plan };
            decision.kind = DecisionKind::Reconcile;
            decision.rationale = format!(
                "{} accepted the change: it is written into the code, so the next `terraform apply` keeps it.",
                person.by()
            );
            for f in &mut decision.fields {
                f.kind = DecisionKind::Reconcile;
                f.rule = PERSON_RULE.into();
            }
            plan
        }
        Answer::Own { field, actor } => {
            decision.kind = DecisionKind::IgnoreChanges;
            decision.rationale = format!(
                "{} decided that {actor} owns {field}: Terraform is told to ignore it (lifecycle ignore_changes) \
                 and the policy file gets a rule, so the next change by {actor} is left to it.",
                person.by()
            );
            let mut owned = false;
            for f in decision.fields.iter_mut().filter(|f| f.path.as_deref().is_some_and(|p| within(p, field))) {
                f.kind = DecisionKind::IgnoreChanges;
                f.rule = PERSON_RULE.into();
                f.owner = actor.clone();
                owned = true;
            }
            let address = decision
                .fields
                .first()
                .and_then(|f| Address::parse(&f.address).ok())
                .or_else(|| plan.changes.first().or(held.changes.first()).map(|c| c.address.clone()));
            if !owned {
                decision.evidence.push(format!("{field} is not among the fields this change set touched"));
            }
            match address {
                Some(address) => Plan {
                    changes: vec![ResourceChange {
                        address,
                        ops: vec![Op::IgnoreChanges { attr: first_name(field).to_string() }],
                        recipes: vec![],
                        created: false,
                    }],
                    ..Plan::default()
                },
                None => Plan::default(),
            }
        }
    };
    for entry in &mut ledger {
        entry.decision = decision.kind;
        if let Answer::Own { field, actor } = &person.answer {
            if within(&entry.path, field) {
                entry.owner = actor.clone();
            }
        }
    }
    Decided { decision, plan, held: Plan::default(), ledger }
}

/// Whether `path` is `field` or inside it (`tags.Team` in `tags`).
fn within(path: &str, field: &str) -> bool {
    path == field || path.strip_prefix(field).is_some_and(|rest| rest.starts_with(['.', '[']))
}

/// The attribute `lifecycle { ignore_changes }` names for a path: its first name.
fn first_name(field: &str) -> &str {
    field.split(['.', '[']).next().unwrap_or(field)
}

/// The change set `id` as the knowledge base has it: its row and its events, read as the daemon's
/// intake read them.
pub async fn change_set_from_store(store: &Store, id: &str) -> anyhow::Result<ChangeSet> {
    let record = store
        .change_set(id)
        .await?
        .with_context(|| format!("the knowledge base has no change set {id}: was it reconciled by this driftback?"))?;
    change_set_of(store, id, record.resource_id, &record.event_ids).await
}

/// The change set `id` on `resource_id` made of the recorded events `event_ids`, read as intake
/// read them. Fails naming the events the knowledge base lacks or cannot read.
pub(crate) async fn change_set_of(
    store: &Store,
    id: &str,
    resource_id: Option<String>,
    event_ids: &[String],
) -> anyhow::Result<ChangeSet> {
    let events = read_events(store, event_ids).await?;
    change_set_from(id, resource_id, event_ids, &events)
}

/// The recorded events among `ids`, each read as intake read it, or why it cannot be.
pub(crate) async fn read_events(
    store: &Store,
    ids: &[String],
) -> anyhow::Result<HashMap<String, Result<ApiEvent, String>>> {
    Ok(store
        .events_by_id(ids)
        .await?
        .into_iter()
        .map(|r| {
            let event = read_record(&r.raw).and_then(|record| record.to_event()).map_err(|e| e.to_string());
            (r.event_id, event)
        })
        .collect())
}

/// The change set `id` on `resource_id` made of the events `event_ids` out of `events` (read by
/// [`read_events`]). Fails naming the events missing or unreadable.
pub(crate) fn change_set_from(
    id: &str,
    resource_id: Option<String>,
    event_ids: &[String],
    events: &HashMap<String, Result<ApiEvent, String>>,
) -> anyhow::Result<ChangeSet> {
    let missing: Vec<&str> = event_ids.iter().filter(|e| !events.contains_key(*e)).map(String::as_str).collect();
    if !missing.is_empty() {
        anyhow::bail!(
            "the knowledge base lacks events {} of change set {id}; it cannot be driven again",
            missing.join(", ")
        );
    }
    let mut read = Vec::with_capacity(event_ids.len());
    for event_id in event_ids {
        match &events[event_id] {
            Ok(event) => read.push(event.clone()),
            Err(e) => anyhow::bail!("event {event_id} of change set {id} cannot be read again: {e}"),
        }
    }
    read.sort_by(time_order);
    let actor = read.first().map(|e| e.actor.clone()).with_context(|| format!("change set {id} has no events"))?;
    Ok(ChangeSet { id: id.to_string(), resource_id, actor, events: read })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_owned_with_what_is_inside_them() {
        assert!(within("tags.Team", "tags") && within("tags", "tags") && within("ingress[0].cidr", "ingress"));
        assert!(!within("tagsx", "tags") && !within("tags", "tags.Team"));
        assert_eq!(first_name("tags.Team"), "tags");
    }
}
